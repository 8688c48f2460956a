// Max, average and adaptive pooling over the trailing 1-3 spatial dims (torch.nn.functional's
// max_pool*, avg_pool*, adaptive_*_pool*): geometry checks with PyTorch's messages, the windows
// per dim, and the kernels of Note [pooling kernels].
#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<PoolFn> max_pool_stub("max_pool");
DispatchStub<PoolFn> avg_pool_stub("avg_pool");
DispatchStub<PoolFn> pool_backward_stub("pool_backward");

namespace {

std::string sizes_x(const IntList& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? "x" : "") + std::to_string(s[i]);
  return r;
}

// The windows of every spatial dim, padded to three dims with unit leading ones.
struct Windows {
  int64_t n = 0, planes = 1, taps = 1;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1};
  std::vector<int64_t> start[3], end[3];
  std::vector<double> count[3];
  int64_t step[3] = {1, 1, 1};
  Window w[3];

  Windows(const Tensor& self, int64_t spatial, const char* op) : n(spatial) {
    EMBER_CHECK(n >= 1 && n <= 3 && self.dim() >= n + 1 && self.dim() <= n + 2, Error, "[", op, "] Expected ",
                n + 1, "D or ", n + 2, "D input, but got input of size: ", dims::str(self.sizes()));
    for (int64_t i = 0; i < self.dim() - n; ++i) planes *= self.size(i);
    for (int64_t i = 0; i < n; ++i) in[3 - n + i] = self.size(self.dim() - n + i);
    for (int i = 0; i < 3 - n; ++i) unit(i);
  }
  void unit(int i) {
    start[i] = {0};
    end[i] = {1};
    count[i] = {1.0};
  }
  void finish() {
    for (int i = 0; i < 3; ++i) {
      out[i] = static_cast<int64_t>(start[i].size());
      w[i] = Window{start[i].data(), end[i].data(), count[i].data(), step[i]};
    }
  }
  IntList out_shape(const Tensor& self) const {
    IntList s(self.sizes().begin(), self.sizes().end() - n);
    for (int64_t i = 0; i < n; ++i) s.push_back(out[3 - n + i]);
    return s;
  }
  PoolArgs args(const Tensor& input, const Tensor& output, const Tensor* indices, double divisor) const {
    return PoolArgs{&input, &output, indices, planes, {in[0], in[1], in[2]}, {out[0], out[1], out[2]},
                    taps,   w,       divisor};
  }
};

IntList per_dim(const char* op, const char* what, const IntList& v, int64_t n, const IntList& fallback = {}) {
  if (v.empty() && !fallback.empty()) return fallback;
  if (v.size() == 1) return IntList(n, v[0]);
  EMBER_CHECK(static_cast<int64_t>(v.size()) == n, Error, "[", op, "] ", what,
              " must either be a single int, or a tuple of ", n, " ints");
  return v;
}

// PyTorch's pooling_output_shape: floor or ceil division; the last window must start inside the
// input or the left padding.
int64_t pooled_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, bool ceil_mode) {
  const int64_t span = in + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
  int64_t out = (span >= 0 ? span / s : -((-span + s - 1) / s)) + 1;
  if (ceil_mode && (out - 1) * s >= in + p) --out;
  return out;
}

struct Geometry {
  IntList kernel, stride, padding, dilation;
};

Geometry checked_geometry(const char* op, int64_t n, const IntList& kernel_size, const IntList& stride,
                          const IntList& padding, const IntList& dilation) {
  Geometry g{per_dim(op, "kernel_size", kernel_size, n),
             {},
             per_dim(op, "padding", padding, n),
             per_dim(op, "dilation", dilation, n)};
  g.stride = per_dim(op, "stride", stride, n, g.kernel);
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(g.kernel[i] > 0, Error, "[", op, "] kernel_size must be greater than zero, but got ",
                dims::str(g.kernel));
    EMBER_CHECK(g.stride[i] > 0, Error, "[", op, "] stride must be greater than zero, but got ",
                dims::str(g.stride));
    EMBER_CHECK(g.dilation[i] > 0, Error, "[", op, "] dilation must be greater than zero, but got ",
                dims::str(g.dilation));
    EMBER_CHECK(g.padding[i] >= 0, Error, "[", op,
                "] pad must be non-negative, but got pad: ", dims::str(g.padding));
    EMBER_CHECK(g.padding[i] <= ((g.kernel[i] - 1) * g.dilation[i] + 1) / 2, Error, "[", op,
                "] pad should be at most half of effective kernel size, but got pad=", g.padding[i],
                ", kernel_size=", g.kernel[i], " and dilation=", g.dilation[i]);
  }
  return g;
}

void check_output(const char* op, const Windows& w, const Tensor& self) {
  IntList out;
  bool ok = true;
  for (int64_t i = 0; i < w.n; ++i) {
    out.push_back(static_cast<int64_t>(w.start[3 - w.n + i].size()));
    ok = ok && out.back() > 0;
  }
  IntList in(self.sizes().end() - w.n - 1, self.sizes().end());
  EMBER_CHECK(
      ok, Error, "[", op, "] Given input size: (", sizes_x(in), "). Calculated output size: (",
      [&] {
        IntList o{self.size(self.dim() - w.n - 1)};
        o.insert(o.end(), out.begin(), out.end());
        return sizes_x(o);
      }(),
      "). Output size is too small");
}

// Max pooling windows: taps at o*s - p + j*d, the ones inside the input.
Windows max_windows(const char* op, const Tensor& self, const Geometry& g, bool ceil_mode) {
  const int64_t n = static_cast<int64_t>(g.kernel.size());
  Windows w(self, n, op);
  for (int64_t i = 0; i < n; ++i) {
    const int dim = static_cast<int>(3 - n + i);
    const int64_t in = w.in[dim], k = g.kernel[i], s = g.stride[i], p = g.padding[i], d = g.dilation[i];
    const int64_t out = pooled_size(in, k, s, p, d, ceil_mode);
    w.step[dim] = d;
    w.taps *= k;
    for (int64_t o = 0; o < std::max<int64_t>(out, 0); ++o) {
      const int64_t first = o * s - p;
      const int64_t j0 = first >= 0 ? 0 : (-first + d - 1) / d;
      const int64_t j1 = std::min(k, in - 1 - first >= 0 ? (in - 1 - first) / d + 1 : 0);
      w.start[dim].push_back(first + j0 * d);
      w.end[dim].push_back(j1 > j0 ? first + (j1 - 1) * d + 1 : first + j0 * d);
      w.count[dim].push_back(static_cast<double>(std::max<int64_t>(j1 - j0, 0)));
    }
  }
  check_output(op, w, self);
  w.finish();
  return w;
}

// Average pooling windows (no dilation): PyTorch's divisors, the window clipped to the padded
// input with count_include_pad, else to the input.
Windows avg_windows(const char* op, const Tensor& self, const Geometry& g, bool ceil_mode,
                    bool count_include_pad) {
  const int64_t n = static_cast<int64_t>(g.kernel.size());
  Windows w(self, n, op);
  for (int64_t i = 0; i < n; ++i) {
    const int dim = static_cast<int>(3 - n + i);
    const int64_t in = w.in[dim], k = g.kernel[i], s = g.stride[i], p = g.padding[i];
    const int64_t out = pooled_size(in, k, s, p, 1, ceil_mode);
    w.taps *= k;
    for (int64_t o = 0; o < std::max<int64_t>(out, 0); ++o) {
      const int64_t lo = o * s - p, hi = std::min(lo + k, in + p);
      const int64_t clo = std::max<int64_t>(lo, 0), chi = std::min(hi, in);
      w.start[dim].push_back(clo);
      w.end[dim].push_back(std::max(clo, chi));
      w.count[dim].push_back(
          static_cast<double>(count_include_pad ? hi - lo : std::max<int64_t>(chi - clo, 0)));
    }
  }
  check_output(op, w, self);
  w.finish();
  return w;
}

// Adaptive windows: [floor(o in / out), ceil((o + 1) in / out)).
Windows adaptive_windows(const char* op, const Tensor& self, const IntList& output_size) {
  const int64_t n = static_cast<int64_t>(output_size.size());
  Windows w(self, n, op);
  for (int64_t i = 0; i < n; ++i) {
    const int dim = static_cast<int>(3 - n + i);
    const int64_t in = w.in[dim], out = output_size[i];
    EMBER_CHECK(out >= 0, Error, "[", op,
                "] elements of output_size must be greater than or equal to 0 but received ",
                dims::str(output_size));
    EMBER_CHECK(in > 0 || out == 0, Error, "[", op,
                "] Expected input to have non-zero size for non-batch dimensions, but input has sizes ",
                dims::str(self.sizes()));
    int64_t longest = 0;
    for (int64_t o = 0; o < out; ++o) {
      const int64_t lo = (o * in) / out, hi = ((o + 1) * in + out - 1) / out;
      w.start[dim].push_back(lo);
      w.end[dim].push_back(hi);
      w.count[dim].push_back(static_cast<double>(hi - lo));
      longest = std::max(longest, hi - lo);
    }
    w.taps *= std::max<int64_t>(longest, 1);
  }
  w.finish();
  return w;
}

Tensor pooled_input(const char* op, const Tensor& self, bool integers_ok) {
  EMBER_CHECK(!is_complex(self.dtype()) && self.dtype() != DType::Bool &&
                  (integers_ok || is_floating_point(self.dtype())),
              NotImplementedError, "[", op, "] not implemented for '", dtype_name(self.dtype()), "'");
  return self.contiguous();
}

// A result in the layout `self` suggests: pooling keeps a channels-last input channels last
// (Note [memory formats]); the kernels themselves work on row-major planes.
Tensor in_layout_of(const Tensor& result, const Tensor& self) {
  return result.contiguous(suggest_memory_format(self));
}

}  // namespace

std::tuple<Tensor, Tensor> max_pool_with_indices(const Tensor& self, const IntList& kernel_size,
                                                 const IntList& stride, const IntList& padding,
                                                 const IntList& dilation, bool ceil_mode) {
  const char* op = "max_pool";
  const Tensor x = pooled_input(op, self, true);
  EMBER_CHECK(!kernel_size.empty() && kernel_size.size() <= 3, Error, "[", op,
              "] kernel_size must be a tuple of 1 to 3 ints, but got ", dims::str(kernel_size));
  const Geometry g =
      checked_geometry(op, static_cast<int64_t>(kernel_size.size()), kernel_size, stride, padding, dilation);
  const Windows w = max_windows(op, x, g, ceil_mode);
  Tensor out = empty(w.out_shape(x), x.dtype(), x.device());
  Tensor indices = empty(w.out_shape(x), DType::Int64, x.device());
  if (out.numel() > 0) max_pool_stub.get(x.device().type)(w.args(x, out, &indices, 0.0));
  return {in_layout_of(out, self), in_layout_of(indices, self)};
}

std::tuple<Tensor, Tensor> adaptive_max_pool(const Tensor& self, const IntList& output_size) {
  const char* op = "adaptive_max_pool";
  const Tensor x = pooled_input(op, self, true);
  EMBER_CHECK(!output_size.empty() && output_size.size() <= 3, Error, "[", op,
              "] output_size must be a tuple of 1 to 3 ints, but got ", dims::str(output_size));
  Windows w = adaptive_windows(op, x, output_size);
  Tensor out = empty(w.out_shape(x), x.dtype(), x.device());
  Tensor indices = empty(w.out_shape(x), DType::Int64, x.device());
  if (out.numel() > 0) max_pool_stub.get(x.device().type)(w.args(x, out, &indices, 0.0));
  return {in_layout_of(out, self), in_layout_of(indices, self)};
}

Tensor max_pool_with_indices_backward(const Tensor& grad_output, const Tensor& self, const Tensor& indices,
                                      int64_t spatial_dims) {
  const char* op = "max_pool_backward";
  EMBER_CHECK(indices.dtype() == DType::Int64 && indices.sizes() == grad_output.sizes(), ValueError, "[", op,
              "] expected int64 indices of grad_output's shape ", dims::str(grad_output.sizes()),
              ", but got ", dtype_name(indices.dtype()), " of shape ", dims::str(indices.sizes()));
  const Tensor x = pooled_input(op, self, false);
  Windows w(x, spatial_dims, op);
  EMBER_CHECK(grad_output.dim() == x.dim(), ValueError, "[", op, "] expected grad_output with ", x.dim(),
              " dims, but got ", grad_output.dim());
  int64_t plane = 1;
  for (int i = 0; i < 3; ++i) plane *= w.in[i];
  for (int64_t i = 0; i < spatial_dims; ++i) {
    w.start[3 - spatial_dims + i].assign(grad_output.size(grad_output.dim() - spatial_dims + i), 0);
    w.end[3 - spatial_dims + i] = w.start[3 - spatial_dims + i];
    w.count[3 - spatial_dims + i].assign(w.start[3 - spatial_dims + i].size(), 0.0);
  }
  w.finish();
  const Tensor idx = indices.contiguous();
  const int64_t* ip = idx.data<int64_t>();
  for (int64_t i = 0; i < idx.numel(); ++i) {  // never a write outside the plane
    EMBER_CHECK(ip[i] >= 0 && ip[i] < plane, IndexError, "[", op, "] index ", ip[i],
                " out of range for a plane of ", plane, " elements");
  }
  const Tensor g =
      (grad_output.dtype() == x.dtype() ? grad_output : to_dtype(grad_output, x.dtype(), false)).contiguous();
  Tensor grad_input = empty(x.sizes(), x.dtype(), x.device());
  if (grad_input.numel() > 0) pool_backward_stub.get(x.device().type)(w.args(grad_input, g, &idx, 0.0));
  return in_layout_of(grad_input, self);
}

Tensor avg_pool(const Tensor& self, const IntList& kernel_size, const IntList& stride, const IntList& padding,
                bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool";
  const Tensor x = pooled_input(op, self, false);
  EMBER_CHECK(!kernel_size.empty() && kernel_size.size() <= 3, Error, "[", op,
              "] kernel_size must be a tuple of 1 to 3 ints, but got ", dims::str(kernel_size));
  EMBER_CHECK(!divisor_override || *divisor_override != 0, Error, "[", op, "] divisor must be not zero");
  const Geometry g = checked_geometry(op, static_cast<int64_t>(kernel_size.size()), kernel_size, stride,
                                      padding, IntList{1});
  const Windows w = avg_windows(op, x, g, ceil_mode, count_include_pad);
  Tensor out = empty(w.out_shape(x), x.dtype(), x.device());
  if (out.numel() > 0)
    avg_pool_stub.get(x.device().type)(
        w.args(x, out, nullptr, divisor_override ? double(*divisor_override) : 0.0));
  return in_layout_of(out, self);
}

Tensor avg_pool_backward(const Tensor& grad_output, const Tensor& self, const IntList& kernel_size,
                         const IntList& stride, const IntList& padding, bool ceil_mode,
                         bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = "avg_pool_backward";
  const Tensor x = pooled_input(op, self, false);
  const Geometry g = checked_geometry(op, static_cast<int64_t>(kernel_size.size()), kernel_size, stride,
                                      padding, IntList{1});
  const Windows w = avg_windows(op, x, g, ceil_mode, count_include_pad);
  EMBER_CHECK(grad_output.sizes() == w.out_shape(x), ValueError, "[", op, "] expected grad_output of shape ",
              dims::str(w.out_shape(x)), ", but got ", dims::str(grad_output.sizes()));
  const Tensor gr =
      (grad_output.dtype() == x.dtype() ? grad_output : to_dtype(grad_output, x.dtype(), false)).contiguous();
  Tensor grad_input = empty(x.sizes(), x.dtype(), x.device());
  if (grad_input.numel() > 0)
    pool_backward_stub.get(x.device().type)(
        w.args(grad_input, gr, nullptr, divisor_override ? double(*divisor_override) : 0.0));
  return in_layout_of(grad_input, self);
}

Tensor adaptive_avg_pool(const Tensor& self, const IntList& output_size) {
  const char* op = "adaptive_avg_pool";
  const Tensor x = pooled_input(op, self, false);
  EMBER_CHECK(!output_size.empty() && output_size.size() <= 3, Error, "[", op,
              "] output_size must be a tuple of 1 to 3 ints, but got ", dims::str(output_size));
  const Windows w = adaptive_windows(op, x, output_size);
  Tensor out = empty(w.out_shape(x), x.dtype(), x.device());
  if (out.numel() > 0) avg_pool_stub.get(x.device().type)(w.args(x, out, nullptr, 0.0));
  return in_layout_of(out, self);
}

Tensor adaptive_avg_pool_backward(const Tensor& grad_output, const Tensor& self, const IntList& output_size) {
  const char* op = "adaptive_avg_pool_backward";
  const Tensor x = pooled_input(op, self, false);
  const Windows w = adaptive_windows(op, x, output_size);
  EMBER_CHECK(grad_output.sizes() == w.out_shape(x), ValueError, "[", op, "] expected grad_output of shape ",
              dims::str(w.out_shape(x)), ", but got ", dims::str(grad_output.sizes()));
  const Tensor gr =
      (grad_output.dtype() == x.dtype() ? grad_output : to_dtype(grad_output, x.dtype(), false)).contiguous();
  Tensor grad_input = empty(x.sizes(), x.dtype(), x.device());
  if (grad_input.numel() > 0) pool_backward_stub.get(x.device().type)(w.args(grad_input, gr, nullptr, 0.0));
  return in_layout_of(grad_input, self);
}

}  // namespace ember
