// The discrete Fourier transform ops behind ember.fft (PyTorch's _fft_c2c, _fft_r2c, _fft_c2r):
// multi-dim transforms done one dim at a time by the 1-D kernel (backend/cpu/fft_kernels.cpp)
// on a contiguous copy with that dim last. `normalization` is PyTorch's fft_norm_mode: 0 none,
// 1 divide by sqrt(n), 2 divide by n, with n the number of points of the transformed signal.
// r2c transforms the last dim with the real-input kernel (n/2+1 bins, from a complex transform
// of half the length for even n), then the other dims with the complex one; c2r inverts the
// other dims, then the last with the Hermitian-to-real kernel (its mirror image).
#include <cmath>
#include <string>
#include <vector>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<FftFn> fft_stub("fft");
DispatchStub<FftR2cFn> fft_r2c_stub("fft_r2c");
DispatchStub<FftC2rFn> fft_c2r_stub("fft_c2r");

namespace {

IntList checked_dims(const char* op, const Tensor& self, const IntList& dim) {
  IntList out;
  for (int64_t d : dim) {
    EMBER_CHECK(self.dim() > 0, IndexError, "[", op,
                "] expected a tensor with at least one dimension, but got a 0-dim tensor");
    const int64_t w = dims::wrap(op, d, self.dim());
    for (int64_t seen : out)
      EMBER_CHECK(seen != w, Error, "[", op, "] expected distinct dims, but dim ", w,
                  " appears more than once in ", dims::str(dim));
    out.push_back(w);
  }
  return out;
}

double norm_scale(const char* op, int64_t normalization, int64_t points) {
  switch (normalization) {
    case 0: return 1.0;
    case 1: return 1.0 / std::sqrt(static_cast<double>(points));
    case 2: return 1.0 / static_cast<double>(points);
    default:
      throw ValueError(std::string("[") + op +
                       "] expected normalization 0 (none), 1 (by sqrt(n)) or 2 (by n), but got " +
                       std::to_string(normalization));
  }
}

DType complex_of(DType d) {
  return d == DType::Float64 ? DType::Complex128 : DType::Complex64;
}

// The unnormalized transform of complex `x` along each of `dims` (already wrapped), one at a time.
Tensor transform(const Tensor& x, const IntList& dims, bool forward) {
  Tensor cur = x;
  for (int64_t d : dims) {
    const Tensor moved = movedim(cur, {d}, {-1});
    Tensor buf = empty(moved.sizes(), x.dtype(), x.device());
    copy_(buf, moved);  // a fresh buffer: the kernel works in place, never on the caller's memory
    const int64_t n = buf.size(-1);
    if (buf.numel() > 0 && n > 1) fft_stub.get(x.device().type)(reshape(buf, {buf.numel() / n, n}), forward);
    cur = movedim(buf, {-1}, {d});
  }
  return cur;
}

Tensor scaled(const Tensor& t, double s) {
  if (s == 1.0) return t.contiguous();
  return mul(t, wrapped_number(Scalar(s)));  // a wrapped number keeps t's dtype
}

int64_t points_of(const Tensor& t, const IntList& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= t.size(d);
  return n;
}

}  // namespace

Tensor fft_c2c(const Tensor& self, const IntList& dim, int64_t normalization, bool forward) {
  EMBER_CHECK(is_complex(self.dtype()), TypeError,
              "[fft_c2c] expected a complex64 or complex128 tensor, but got ", dtype_name(self.dtype()));
  const IntList dims = checked_dims("fft_c2c", self, dim);
  const double s = norm_scale("fft_c2c", normalization, points_of(self, dims));
  Tensor out = transform(self, dims, forward);
  if (dims.empty()) out = clone(self);
  return scaled(out, s);
}

Tensor fft_r2c(const Tensor& self, const IntList& dim, int64_t normalization, bool onesided) {
  EMBER_CHECK(self.dtype() == DType::Float32 || self.dtype() == DType::Float64, TypeError,
              "[fft_r2c] expected a float32 or float64 tensor, but got ", dtype_name(self.dtype()));
  const IntList dims = checked_dims("fft_r2c", self, dim);
  EMBER_CHECK(!dims.empty(), ValueError, "[fft_r2c] expected at least one dim to transform, but got none");
  const double s = norm_scale("fft_r2c", normalization, points_of(self, dims));
  const int64_t last = dims.back(), n = self.size(last), bins = n / 2 + 1;
  EMBER_CHECK(n >= 1, ValueError, "[fft_r2c] expected at least one point along dim ", last, ", but got none");
  // the last dim first, by the real-input kernel, so the other dims transform only n/2+1 bins
  const Tensor in = movedim(self, {last}, {-1}).contiguous();
  IntList out_sizes = in.sizes();
  out_sizes.back() = bins;
  Tensor out = empty(out_sizes, complex_of(self.dtype()), self.device());
  if (out.numel() > 0)
    fft_r2c_stub.get(self.device().type)(reshape(out, {out.numel() / bins, bins}),
                                         reshape(in, {in.numel() / n, n}));
  out = movedim(out, {-1}, {last});
  // the bins above n/2 are the conjugates of those below (the input is real)
  if (!onesided && n > bins)
    out = cat({out, conj_physical(flip(narrow(out, last, 1, n - bins), {last}))}, last);
  out = transform(out, IntList(dims.begin(), dims.end() - 1), true);
  return scaled(out, s);
}

Tensor fft_c2r(const Tensor& self, const IntList& dim, int64_t normalization, int64_t last_dim_size) {
  EMBER_CHECK(is_complex(self.dtype()), TypeError,
              "[fft_c2r] expected a complex64 or complex128 tensor, but got ", dtype_name(self.dtype()));
  const IntList dims = checked_dims("fft_c2r", self, dim);
  EMBER_CHECK(!dims.empty(), ValueError, "[fft_c2r] expected at least one dim to transform, but got none");
  EMBER_CHECK(last_dim_size >= 1, ValueError, "[fft_c2r] expected last_dim_size >= 1, but got ",
              last_dim_size);
  const int64_t last = dims.back(), half = last_dim_size / 2 + 1;
  EMBER_CHECK(self.size(last) >= half, ValueError, "[fft_c2r] expected at least ", half,
              " bins along the last transformed dim for an output of ", last_dim_size, " points, but got ",
              self.size(last));
  const Tensor x = narrow(transform(self, IntList(dims.begin(), dims.end() - 1), false), last, 0, half);
  const Tensor in = movedim(x, {last}, {-1}).contiguous();
  IntList out_sizes = in.sizes();
  out_sizes.back() = last_dim_size;
  Tensor out =
      empty(out_sizes, self.dtype() == DType::Complex128 ? DType::Float64 : DType::Float32, self.device());
  if (out.numel() > 0)
    fft_c2r_stub.get(self.device().type)(reshape(out, {out.numel() / last_dim_size, last_dim_size}),
                                         reshape(in, {in.numel() / half, half}));
  const double s =
      norm_scale("fft_c2r", normalization, points_of(self, dims) / self.size(last) * last_dim_size);
  return scaled(movedim(out, {-1}, {last}), s);
}

}  // namespace ember
