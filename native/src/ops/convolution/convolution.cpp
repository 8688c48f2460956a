// convolution and convolution_backward (PyTorch's aten ops behind conv1d/2d/3d and
// conv_transpose1d/2d/3d): geometry checks with PyTorch's messages, output shapes, and the
// GEMM-based kernels of Note [convolution kernels]. float16/bfloat16 compute in float32.
#include <algorithm>
#include <optional>
#include <string>
#include <tuple>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/dims.h"
#include "ops/kernels.h"

namespace ember {

DispatchStub<ConvFn> conv_forward_stub("convolution");
DispatchStub<ConvFn> conv_backward_input_stub("convolution_backward_input");
DispatchStub<ConvFn> conv_backward_weight_stub("convolution_backward_weight");

namespace {

// "2 x 3" for PyTorch's size messages
std::string sizes_x(const IntList& s) {
  std::string r;
  for (size_t i = 0; i < s.size(); ++i) r += (i ? " x " : "") + std::to_string(s[i]);
  return r;
}

// One geometry argument as one value per spatial dim (a single value repeats).
IntList per_dim(const char* what, const IntList& v, int64_t n) {
  if (v.size() == 1) return IntList(n, v[0]);
  EMBER_CHECK(static_cast<int64_t>(v.size()) == n, Error, "[convolution] expected ", what,
              " to be a single integer or ", n, " integers, but got ", dims::str(v));
  return v;
}

struct Plan {
  int64_t n;  // spatial dims
  IntList stride, padding, dilation, output_padding, kernel, in, out;
  DType compute;
};

DType compute_dtype(const Tensor& input, const Tensor& weight) {
  EMBER_CHECK(input.dtype() == weight.dtype(), Error, "[convolution] Input type (", dtype_name(input.dtype()),
              ") and weight type (", dtype_name(weight.dtype()), ") should be the same");
  const DType d = input.dtype();
  EMBER_CHECK(d == DType::Float32 || d == DType::Float64 || d == DType::Float16 || d == DType::BFloat16,
              NotImplementedError, "[convolution] not implemented for '", dtype_name(d), "'");
  return d == DType::Float64 ? DType::Float64 : DType::Float32;
}

Plan plan(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias, const IntList& stride,
          const IntList& padding, const IntList& dilation, bool transposed, const IntList& output_padding,
          int64_t groups) {
  const int64_t n = input.dim() - 2;
  EMBER_CHECK(n >= 1 && n <= 3 && weight.dim() == input.dim(), Error, "[convolution] Expected ",
              weight.dim() - 1, "D (unbatched) or ", weight.dim(), "D (batched) input to conv",
              weight.dim() - 2, "d, but got input of size: ", dims::str(input.sizes()));
  EMBER_CHECK(input.device() == weight.device(), Error,
              "[convolution] expected all tensors to be on the same device, but got ", input.device().str(),
              " and ", weight.device().str());
  Plan p{n,
         per_dim("stride", stride, n),
         per_dim("padding", padding, n),
         per_dim("dilation", dilation, n),
         per_dim("output_padding", output_padding, n),
         IntList(weight.sizes().begin() + 2, weight.sizes().end()),
         IntList(input.sizes().begin() + 2, input.sizes().end()),
         IntList(n),
         compute_dtype(input, weight)};
  for (int64_t i = 0; i < n; ++i) {
    EMBER_CHECK(p.stride[i] > 0, Error, "[convolution] non-positive stride is not supported");
    EMBER_CHECK(p.dilation[i] > 0, Error, "[convolution] dilation should be greater than zero, but got ",
                dims::str(p.dilation));
    EMBER_CHECK(p.padding[i] >= 0, Error, "[convolution] negative padding is not supported");
    EMBER_CHECK(p.output_padding[i] >= 0, Error, "[convolution] negative output_padding is not supported");
  }
  EMBER_CHECK(groups > 0, Error, "[convolution] non-positive groups is not supported");
  const int64_t channels = input.size(1);
  if (!transposed) {
    EMBER_CHECK(weight.size(0) % groups == 0 && channels == weight.size(1) * groups, Error,
                "[convolution] Given groups=", groups, ", weight of size ", dims::str(weight.sizes()),
                ", expected input", dims::str(input.sizes()), " to have ", weight.size(1) * groups,
                " channels, but got ", channels, " channels instead");
    IntList padded(n);
    bool fits = true;
    for (int64_t i = 0; i < n; ++i) {
      padded[i] = p.in[i] + 2 * p.padding[i];
      fits = fits && padded[i] >= p.dilation[i] * (p.kernel[i] - 1) + 1;
    }
    EMBER_CHECK(fits, Error, "[convolution] Calculated padded input size per channel: (", sizes_x(padded),
                "). Kernel size: (", sizes_x(p.kernel),
                "). Kernel size can't be greater than actual input size");
    for (int64_t i = 0; i < n; ++i)
      p.out[i] = (padded[i] - p.dilation[i] * (p.kernel[i] - 1) - 1) / p.stride[i] + 1;
  } else {
    EMBER_CHECK(channels == weight.size(0) && weight.size(0) % groups == 0, Error,
                "[convolution] Given transposed=1, weight of size ", dims::str(weight.sizes()),
                ", expected input", dims::str(input.sizes()), " to have ", weight.size(0),
                " channels, but got ", channels, " channels instead");
    for (int64_t i = 0; i < n; ++i) {
      EMBER_CHECK(p.output_padding[i] < std::max(p.stride[i], p.dilation[i]), Error,
                  "[convolution] output padding must be smaller than either stride or dilation, but got "
                  "output_padding=",
                  dims::str(p.output_padding), ", stride=", dims::str(p.stride),
                  ", dilation=", dims::str(p.dilation));
      p.out[i] = (p.in[i] - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (p.kernel[i] - 1) +
                 p.output_padding[i] + 1;
    }
    EMBER_CHECK(*std::min_element(p.out.begin(), p.out.end()) > 0, Error,
                "[convolution] Given input size per channel: (", sizes_x(p.in),
                "). Calculated output size per channel: (", sizes_x(p.out), "). Output size is too small");
  }
  if (bias && bias->defined()) {
    const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
    EMBER_CHECK(bias->dim() == 1 && bias->size(0) == out_channels, Error,
                "[convolution] Given weight of size ", dims::str(weight.sizes()),
                ", expected bias to be 1-dimensional with ", out_channels, " elements, but got bias of size ",
                dims::str(bias->sizes()), " instead");
  }
  return p;
}

// The kernel arguments of the regular convolution `input` -> `output` (leading unit dims for 1-d/2-d).
ConvArgs regular(const Tensor& input, const Tensor& weight, const Tensor& output, const Plan& p,
                 int64_t groups) {
  ConvArgs a{&input,    &weight,   &output,   input.size(0), input.size(1), output.size(1), groups,
             {1, 1, 1}, {1, 1, 1}, {1, 1, 1}, {1, 1, 1},     {0, 0, 0},     {1, 1, 1},      false};
  const int64_t off = 3 - p.n;
  for (int64_t i = 0; i < p.n; ++i) {
    a.input_size[off + i] = input.size(2 + i);
    a.output_size[off + i] = output.size(2 + i);
    a.kernel[off + i] = p.kernel[i];
    a.stride[off + i] = p.stride[i];
    a.padding[off + i] = p.padding[i];
    a.dilation[off + i] = p.dilation[i];
  }
  return a;
}

Tensor as_compute(const Tensor& t, DType d, MemoryFormat layout = MemoryFormat::Contiguous) {
  return (t.dtype() == d ? t : to_dtype(t, d, false)).contiguous(layout);
}

IntList shape_of(int64_t batch, int64_t channels, const IntList& spatial) {
  IntList s{batch, channels};
  s.insert(s.end(), spatial.begin(), spatial.end());
  return s;
}

// out += bias over channel dim 1
void add_bias(Tensor& out, const Tensor& bias) {
  IntList view_shape(out.dim(), 1);
  view_shape[1] = bias.numel();
  out = add(out, reshape(to_dtype(bias, out.dtype(), false), view_shape), Scalar(int64_t(1)), std::nullopt);
}

// The layout of a convolution's result and input gradient: channels last when the input or the
// weight is (Note [memory formats]), as PyTorch's CPU convolution decides.
MemoryFormat conv_format(const Tensor& input, const Tensor& weight) {
  const MemoryFormat f = suggest_memory_format(input);
  return f != MemoryFormat::Contiguous ? f : suggest_memory_format(weight);
}

}  // namespace

Tensor convolution(const Tensor& input, const Tensor& weight, const std::optional<Tensor>& bias,
                   const IntList& stride, const IntList& padding, const IntList& dilation, bool transposed,
                   const IntList& output_padding, int64_t groups) {
  const Plan p = plan(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups);
  const MemoryFormat format = conv_format(input, weight);
  // one group, channels last: computed in that layout (Note [channels-last convolution])
  const bool nhwc = format != MemoryFormat::Contiguous && !transposed && groups == 1;
  const MemoryFormat layout = nhwc ? format : MemoryFormat::Contiguous;
  const Tensor x = as_compute(input, p.compute, layout), w = as_compute(weight, p.compute, layout);
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  Tensor out = empty(shape_of(x.size(0), out_channels, p.out), p.compute, x.device(), layout);
  if (out.numel() > 0) {
    if (!transposed) {
      ConvArgs a = regular(x, w, out, p, groups);
      a.channels_last = nhwc;
      const bool with_bias = bias && bias->defined();
      if (with_bias) {  // the GEMM adds onto the broadcast bias
        IntList view_shape(out.dim(), 1);
        view_shape[1] = out_channels;
        copy_(out, expand(reshape(as_compute(*bias, p.compute), view_shape), out.sizes()));
        a.accumulate = true;
      }
      if (x.numel() > 0) {
        conv_forward_stub.get(x.device().type)(a);
      } else if (!with_bias) {
        zero_(out);
      }
    } else {  // the adjoint of the regular convolution out -> x
      if (x.numel() > 0) {
        conv_backward_input_stub.get(x.device().type)(regular(out, w, x, p, groups));
      } else {
        zero_(out);
      }
      if (bias && bias->defined()) add_bias(out, *bias);
    }
  }
  return (out.dtype() == input.dtype() ? out : to_dtype(out, input.dtype(), false)).contiguous(format);
}

std::tuple<Tensor, Tensor, Tensor> convolution_backward(const Tensor& grad_output, const Tensor& input,
                                                        const Tensor& weight, const IntList& stride,
                                                        const IntList& padding, const IntList& dilation,
                                                        bool transposed, const IntList& output_padding,
                                                        int64_t groups, bool input_grad, bool weight_grad,
                                                        bool bias_grad) {
  const Plan p =
      plan(input, weight, std::nullopt, stride, padding, dilation, transposed, output_padding, groups);
  const int64_t out_channels = transposed ? weight.size(1) * groups : weight.size(0);
  const IntList out_shape = shape_of(input.size(0), out_channels, p.out);
  EMBER_CHECK(grad_output.sizes() == out_shape, ValueError,
              "[convolution_backward] expected grad_output of shape ", dims::str(out_shape), ", but got ",
              dims::str(grad_output.sizes()));
  const Tensor x = as_compute(input, p.compute), w = as_compute(weight, p.compute);
  const Tensor g = as_compute(grad_output, p.compute);
  Tensor gi, gw, gb;
  if (input_grad) {
    gi = empty(x.sizes(), p.compute, x.device());
    if (gi.numel() == 0) {
    } else if (g.numel() == 0) {
      zero_(gi);
    } else if (!transposed) {
      conv_backward_input_stub.get(x.device().type)(regular(gi, w, g, p, groups));
    } else {  // the transposed convolution's input gradient is the regular convolution of g
      conv_forward_stub.get(x.device().type)(regular(g, w, gi, p, groups));
    }
  }
  if (weight_grad) {
    gw = empty(w.sizes(), p.compute, x.device());
    if (gw.numel() == 0) {
    } else if (g.numel() == 0 || x.numel() == 0) {
      zero_(gw);
    } else if (!transposed) {
      conv_backward_weight_stub.get(x.device().type)(regular(x, gw, g, p, groups));
    } else {  // the regular convolution g -> x, whose weight has the transposed one's layout
      conv_backward_weight_stub.get(x.device().type)(regular(g, gw, x, p, groups));
    }
  }
  if (bias_grad) {
    IntList reduce{0};
    for (int64_t d = 2; d < g.dim(); ++d) reduce.push_back(d);
    gb = sum(g, reduce, false, std::nullopt);
  }
  auto back = [&](const Tensor& t, DType d, MemoryFormat f) {
    return !t.defined() ? t : (t.dtype() == d ? t : to_dtype(t, d, false)).contiguous(f);
  };
  return {back(gi, input.dtype(), conv_format(input, weight)),
          back(gw, weight.dtype(), suggest_memory_format(weight)),
          back(gb, grad_output.dtype(), MemoryFormat::Contiguous)};
}

}  // namespace ember
