// example::scale_add(x, y, *, alpha=1.0) = x + alpha * y, for same-shape float tensors, and
// example::soft_clamp(x, *, limit=1.0) = limit * tanh(x / limit).
//
// The whole recipe for an out-of-tree op: declare it once with its schema, give it a kernel per
// device, declare its derivatives as built-in ops do (one formula per Tensor argument, and
// "result" for forward mode), and let EMBER_LIBRARY register all of it when
// ember.ops.load_library() loads the file.
#include <ember/ember.h>

namespace {

template <typename T>
void scale_add_kernel(const ember::Tensor& x, const ember::Tensor& y, double alpha,
                      const ember::Tensor& out) {
  const T* xp = x.data<T>();
  const T* yp = y.data<T>();
  T* op = out.data<T>();
  const T a = static_cast<T>(alpha);
  for (int64_t i = 0; i < out.numel(); ++i) op[i] = xp[i] + a * yp[i];
}

ember::Tensor scale_add_cpu(const ember::Tensor& x, const ember::Tensor& y, double alpha) {
  EMBER_CHECK(x.sizes() == y.sizes(), ember::ValueError,
              "[example::scale_add] expected x and y of the same shape, but got ", x.dim(), "-d and ",
              y.dim(), "-d tensors of different sizes");
  EMBER_CHECK(x.dtype() == y.dtype(), ember::TypeError,
              "[example::scale_add] expected x and y of one dtype, but got ", ember::dtype_name(x.dtype()),
              " and ", ember::dtype_name(y.dtype()));
  // Kernels may assume nothing about strides: make both inputs contiguous first.
  const ember::Tensor xc = x.contiguous();
  const ember::Tensor yc = y.contiguous();
  ember::Tensor out = ember::empty(x.sizes(), x.dtype(), x.device());
  switch (x.dtype()) {
    case ember::DType::Float32: scale_add_kernel<float>(xc, yc, alpha, out); break;
    case ember::DType::Float64: scale_add_kernel<double>(xc, yc, alpha, out); break;
    default:
      throw ember::TypeError(std::string("[example::scale_add] expected float32 or float64, but got ") +
                             ember::dtype_name(x.dtype()));
  }
  return out;
}

ember::Tensor soft_clamp_cpu(const ember::Tensor& x, double limit) {
  EMBER_CHECK(limit > 0, ember::ValueError, "[example::soft_clamp] expected limit > 0, but got ", limit);
  EMBER_CHECK(x.dtype() == ember::DType::Float32 || x.dtype() == ember::DType::Float64, ember::TypeError,
              "[example::soft_clamp] expected float32 or float64, but got ", ember::dtype_name(x.dtype()));
  return ember::mul(ember::tanh(ember::div(x, ember::wrapped_number(limit))), ember::wrapped_number(limit));
}

using ember::FormulaContext;
namespace ag = ember::autograd;  // formulas use the recording ops, so they differentiate again

// d soft_clamp / dx = 1 - (result / limit)^2, written with the saved output.
ember::Tensor soft_clamp_slope(const FormulaContext& c) {
  const ember::Tensor ratio = ag::div(c.result(), c.number("limit"));
  return ag::sub(ember::wrapped_number(1.0), ag::mul(ratio, ratio));
}

}  // namespace

EMBER_LIBRARY(example, m) {
  m.def("scale_add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor");
  m.impl("scale_add", ember::DispatchKey::CPU, &scale_add_cpu);
  m.derivatives("scale_add",
                {
                    {"x", [](const FormulaContext& c) { return c.grad(); }},
                    {"y", [](const FormulaContext& c) { return ag::mul(c.grad(), c.number("alpha")); }},
                    {"result",
                     [](const FormulaContext& c) {
                       return ag::add(c.tangent("x"), ag::mul(c.tangent("y"), c.number("alpha")));
                     }},
                });

  m.def("soft_clamp(Tensor x, *, float limit=1.0) -> Tensor");
  m.impl("soft_clamp", ember::DispatchKey::CPU, &soft_clamp_cpu);
  m.derivatives(
      "soft_clamp",
      {
          {"x", [](const FormulaContext& c) { return ag::mul(c.grad(), soft_clamp_slope(c)); }},
          {"result", [](const FormulaContext& c) { return ag::mul(c.tangent("x"), soft_clamp_slope(c)); }},
      });
}
