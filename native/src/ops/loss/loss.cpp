// nll_loss_forward / nll_loss_backward (PyTorch's aten schemas): the negative log-likelihood of
// class indices, which cross_entropy applies to log_softmax's result. One pass over the targets
// reads one log-probability each; the backward writes one value per target into a zero gradient.
//
// Note [nll layouts]: input is (C) with a 0-d target, or (N, C, d1, ...) with target (N, d1, ...);
// the class dim is 1 and the spatial dims d1... are flattened to S, so element (n, c, s) lies at
// (n * C + c) * S + s. PyTorch splits this over nll_loss, nll_loss2d and a reshape in Python.
// Sums run in double; 'mean' divides by the summed weights of the targets not ignored (0/0 = NaN).
#include <tuple>
#include <type_traits>

#include "ember/error.h"
#include "ember/ops.h"
#include "ember/scalar_types.h"
#include "ops/dims.h"

namespace ember {
namespace {

enum Reduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

struct Layout {
  int64_t batch = 1, classes = 1, spatial = 1;
};

Layout check(const char* op, const Tensor& self, const Tensor& target, const std::optional<Tensor>& weight,
             int64_t reduction) {
  EMBER_CHECK(self.device().type == DeviceType::CPU, NotImplementedError, "[", op, "] not implemented for ",
              self.device().str());
  EMBER_CHECK(is_floating_point(self.dtype()), NotImplementedError, "[", op, "] not implemented for '",
              dtype_name(self.dtype()), "'");
  EMBER_CHECK(target.dtype() == DType::Int64, Error, "[", op, "] expected scalar type Long but found ",
              dtype_name(target.dtype()));
  EMBER_CHECK(self.dim() >= 1, ValueError, "[", op, "] Expected 1 or more dimensions (got ", self.dim(), ")");
  EMBER_CHECK(reduction >= kNone && reduction <= kSum, ValueError, "[", op, "] ", reduction,
              " is not a valid value for reduction");
  Layout l;
  if (self.dim() == 1) {
    EMBER_CHECK(target.dim() == 0, Error, "[", op, "] 0D target tensor expected for 1D input, but got ",
                target.dim(), "D");
    l.classes = self.size(0);
  } else {
    l.batch = self.size(0);
    l.classes = self.size(1);
    EMBER_CHECK(target.dim() >= 1 && target.size(0) == l.batch, ValueError, "[", op,
                "] Expected input batch_size (", l.batch, ") to match target batch_size (",
                target.dim() >= 1 ? target.size(0) : 0, ").");
    IntList want(self.sizes().begin() + 2, self.sizes().end());
    IntList got(target.sizes().begin() + 1, target.sizes().end());
    EMBER_CHECK(want == got, Error, "[", op, "] size mismatch (got input: ", dims::str(self.sizes()),
                ", target: ", dims::str(target.sizes()), ")");
    for (int64_t s : want) l.spatial *= s;
  }
  if (weight && weight->defined()) {
    EMBER_CHECK(weight->dim() == 1 && weight->numel() == l.classes, Error, "[", op,
                "] weight tensor should be defined either for all ", l.classes,
                " classes or no classes but got weight tensor of shape: ", dims::str(weight->sizes()));
  }
  return l;
}

// The class of target element i, or -1 when it is ignored; IndexError past the classes.
int64_t class_of(const int64_t* t, int64_t i, int64_t classes, int64_t ignore_index) {
  const int64_t c = t[i];
  if (c == ignore_index) return -1;
  EMBER_CHECK(c >= 0 && c < classes, IndexError, "[nll_loss] Target ", c, " is out of bounds.");
  return c;
}

// Calls f(T{}) with T the C++ type of a floating dtype.
template <typename F>
void by_float_type(DType d, const F& f) {
  switch (d) {
    case DType::Float32: f(float{}); break;
    case DType::Float64: f(double{}); break;
    case DType::Float16: f(Half{}); break;
    case DType::BFloat16: f(BFloat16{}); break;
    default: EMBER_CHECK(false, NotImplementedError, "[nll_loss] not implemented for '", dtype_name(d), "'");
  }
}

// Values to and from the double the sums run in (16-bit types through float).
template <typename T>
double widen(T v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return static_cast<double>(v);
  } else {
    return static_cast<double>(static_cast<float>(v));
  }
}
template <typename T>
T narrow(double v) {
  if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
    return static_cast<T>(v);
  } else {
    return T(static_cast<float>(v));
  }
}

// The class weights in self's dtype, contiguous (undefined when absent).
Tensor weights_of(const std::optional<Tensor>& weight, DType dtype) {
  if (!weight || !weight->defined()) return Tensor();
  return (weight->dtype() == dtype ? *weight : to_dtype(*weight, dtype, false)).contiguous();
}

}  // namespace

std::tuple<Tensor, Tensor> nll_loss_forward(const Tensor& self, const Tensor& target,
                                            const std::optional<Tensor>& weight, int64_t reduction,
                                            int64_t ignore_index) {
  const Layout l = check("nll_loss_forward", self, target, weight, reduction);
  const Tensor x = self.contiguous(), t = target.contiguous(), w = weights_of(weight, self.dtype());
  const int64_t count = l.batch * l.spatial;
  Tensor out = empty(reduction == kNone ? target.sizes() : IntList{}, self.dtype(), self.device());
  Tensor total = empty({}, self.dtype(), self.device());
  by_float_type(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* xv = x.data<T>();
    const T* wv = w.defined() ? w.data<T>() : nullptr;
    const int64_t* tv = t.data<int64_t>();
    T* o = out.data<T>();
    double sum = 0, weights = 0;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t c = class_of(tv, i, l.classes, ignore_index);
      const int64_t n = i / l.spatial, s = i % l.spatial;
      const double wc = c < 0 ? 0.0 : (wv ? widen(wv[c]) : 1.0);
      const double v = c < 0 ? 0.0 : -wc * widen(xv[(n * l.classes + c) * l.spatial + s]);
      if (reduction == kNone) o[i] = narrow<T>(v);
      sum += v;
      weights += wc;
    }
    if (reduction == kSum) *o = narrow<T>(sum);
    if (reduction == kMean) *o = narrow<T>(sum / weights);
    *total.data<T>() = narrow<T>(weights);
  });
  return {out, total};
}

Tensor nll_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                         const std::optional<Tensor>& weight, int64_t reduction, int64_t ignore_index,
                         const Tensor& total_weight) {
  const Layout l = check("nll_loss_backward", self, target, weight, reduction);
  const IntList grad_shape = reduction == kNone ? target.sizes() : IntList{};
  EMBER_CHECK(grad_output.sizes() == grad_shape, ValueError,
              "[nll_loss_backward] expected grad_output of shape ", dims::str(grad_shape), ", but got ",
              dims::str(grad_output.sizes()));
  EMBER_CHECK(total_weight.numel() == 1, ValueError,
              "[nll_loss_backward] expected total_weight to be a single element tensor, got: ",
              dims::str(total_weight.sizes()));
  const Tensor g = to_dtype(grad_output, self.dtype(), false).contiguous(), t = target.contiguous();
  const Tensor w = weights_of(weight, self.dtype());
  const double total = *to_dtype(total_weight, DType::Float64, false).contiguous().data<double>();
  Tensor grad = zeros(self.sizes(), self.dtype(), self.device());
  const int64_t count = l.batch * l.spatial;
  by_float_type(self.dtype(), [&](auto zero) {
    using T = decltype(zero);
    const T* gv = g.data<T>();
    const T* wv = w.defined() ? w.data<T>() : nullptr;
    const int64_t* tv = t.data<int64_t>();
    T* out = grad.data<T>();
    // 'mean' scales every gradient by 1 / total_weight, as PyTorch does (NaN when it is 0)
    const double scale = reduction == kMean ? 1.0 / total : 1.0;
    for (int64_t i = 0; i < count; ++i) {
      const int64_t c = class_of(tv, i, l.classes, ignore_index);
      if (c < 0) continue;
      const int64_t n = i / l.spatial, s = i % l.spatial;
      const double wc = wv ? widen(wv[c]) : 1.0;
      const double go = widen(gv[reduction == kNone ? i : 0]);
      out[(n * l.classes + c) * l.spatial + s] = narrow<T>(-wc * go * scale);
    }
  });
  return grad;
}

}  // namespace ember
