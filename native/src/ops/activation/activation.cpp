// The fused activations (Note [fused activations] in src/ops/kernels.h): gelu, silu, mish,
// softplus, hardswish and hardsigmoid, and their backward ops (PyTorch's aten::gelu_backward and friends).
#include <string>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/promotion.h"
#include "ops/kernels.h"
#include "ops/pointwise/pointwise.h"

namespace ember {

DispatchStub<ActivationFn> activation_stub("activation");
DispatchStub<ActivationBackwardFn> activation_backward_stub("activation_backward");

namespace {

// Integer inputs compute in the default float dtype, as PyTorch's activations do.
Tensor floating(const char* op, const Tensor& x) {
  EMBER_CHECK(!is_complex(x.dtype()), NotImplementedError, "[", op, "] not implemented for complex dtype ",
              dtype_name(x.dtype()));
  return is_floating_point(x.dtype()) ? x : to_dtype(x, get_default_dtype(), false);
}

ActivationOp gelu_kind(const std::string& approximate) {
  if (approximate == "none") return ActivationOp::Gelu;
  EMBER_CHECK(approximate == "tanh", ValueError,
              "[gelu] approximate argument must be either none or tanh, but got '", approximate, "'");
  return ActivationOp::GeluTanh;
}

Tensor forward(const char* name, ActivationOp op, const Tensor& self, double beta = 1.0,
               double threshold = 20.0) {
  const Tensor x = floating(name, self);
  // the kernel writes through strides: a channels-last input gets a channels-last result
  Tensor out = empty(x.sizes(), x.dtype(), x.device(), suggest_memory_format(x));
  activation_stub.get(x.device().type)(op, out, x, beta, threshold);
  return out;
}

Tensor backward(const char* name, ActivationOp op, const Tensor& grad_output, const Tensor& self,
                double beta = 1.0, double threshold = 20.0) {
  const Tensor x = floating(name, self);
  EMBER_CHECK(grad_output.device() == x.device(), Error, "[", name,
              "] expected all tensors to be on the same device, but got ", grad_output.device().str(),
              " and ", x.device().str());
  const IntList shape = pointwise::broadcast_shapes(name, grad_output.sizes(), x.sizes());
  const Tensor g = grad_output.dtype() == x.dtype() ? grad_output : to_dtype(grad_output, x.dtype(), false);
  Tensor grad_input = empty(shape, x.dtype(), x.device(),
                            shape == x.sizes() ? suggest_memory_format(x) : MemoryFormat::Contiguous);
  activation_backward_stub.get(x.device().type)(op, grad_input, g, x, beta, threshold);
  return grad_input;
}

}  // namespace

Tensor gelu(const Tensor& self, const std::string& approximate) {
  return forward("gelu", gelu_kind(approximate), self);
}
Tensor silu(const Tensor& self) {
  return forward("silu", ActivationOp::Silu, self);
}
Tensor mish(const Tensor& self) {
  return forward("mish", ActivationOp::Mish, self);
}
Tensor softplus(const Tensor& self, double beta, double threshold) {
  return forward("softplus", ActivationOp::Softplus, self, beta, threshold);
}

Tensor hardswish(const Tensor& self) {
  return forward("hardswish", ActivationOp::Hardswish, self);
}
Tensor hardsigmoid(const Tensor& self) {
  return forward("hardsigmoid", ActivationOp::Hardsigmoid, self);
}

Tensor gelu_backward(const Tensor& grad_output, const Tensor& self, const std::string& approximate) {
  return backward("gelu_backward", gelu_kind(approximate), grad_output, self);
}
Tensor silu_backward(const Tensor& grad_output, const Tensor& self) {
  return backward("silu_backward", ActivationOp::Silu, grad_output, self);
}
Tensor mish_backward(const Tensor& grad_output, const Tensor& self) {
  return backward("mish_backward", ActivationOp::Mish, grad_output, self);
}
Tensor softplus_backward(const Tensor& grad_output, const Tensor& self, double beta, double threshold) {
  return backward("softplus_backward", ActivationOp::Softplus, grad_output, self, beta, threshold);
}
Tensor hardswish_backward(const Tensor& grad_output, const Tensor& self) {
  return backward("hardswish_backward", ActivationOp::Hardswish, grad_output, self);
}
Tensor hardsigmoid_backward(const Tensor& grad_output, const Tensor& self) {
  return backward("hardsigmoid_backward", ActivationOp::Hardsigmoid, grad_output, self);
}

}  // namespace ember
