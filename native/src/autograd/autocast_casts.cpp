// The casts of autocast (Note [autocast] in ember/autocast.h): the differentiable to_dtype, so
// that gradients reach the original tensors in their own dtype.
#include "ember/autocast.h"
#include "ember/autograd.h"
#include "ember/ops.h"
#include "ember/promotion.h"

namespace ember::autocast {

namespace {

// PyTorch's eligibility on CPU: a floating CPU tensor other than float64.
bool eligible(const Tensor& t) {
  return t.defined() && t.device().type == DeviceType::CPU && is_floating_point(t.dtype()) &&
         t.dtype() != DType::Float64;
}

}  // namespace

DType target_dtype(Policy policy) {
  return policy == Policy::Fp32 ? DType::Float32 : get_dtype(DeviceType::CPU);
}

DType promote_dtype(std::initializer_list<const Tensor*> tensors,
                    std::initializer_list<const std::vector<Tensor>*> lists) {
  DType widest = get_dtype(DeviceType::CPU);
  for (const Tensor* t : tensors) {
    if (t != nullptr && eligible(*t)) widest = promote_types(widest, t->dtype());
  }
  for (const std::vector<Tensor>* list : lists) {
    for (const Tensor& t : *list) {
      if (eligible(t)) widest = promote_types(widest, t.dtype());
    }
  }
  return widest;
}

Tensor cast(const Tensor& t, DType to) {
  if (!eligible(t) || t.dtype() == to) return t;
  // Only float32 leaves that require grad (weights) are cached, and only on their way down to the
  // autocast dtype: their cast is the same all region long, as no optimizer step happens inside.
  // Unlike PyTorch, a cast made with grad mode off is not cached: it has no history, and a later
  // use of it with grad mode on would silently give the weight no gradient.
  const bool cacheable = to == get_dtype(DeviceType::CPU) && t.dtype() == DType::Float32 &&
                         is_cache_enabled() && GradMode::is_enabled() && autograd::requires_grad(t) &&
                         autograd::is_leaf(t) && !autograd::view_base(t).defined();
  if (cacheable) {
    if (std::optional<Tensor> hit = cache_find(t)) return *hit;
  }
  Tensor out = autograd::to_dtype(t, to, false);
  if (cacheable) cache_insert(t, out);
  return out;
}

std::optional<Tensor> cast(const std::optional<Tensor>& t, DType to) {
  if (!t) return t;
  return cast(*t, to);
}

std::vector<Tensor> cast(const std::vector<Tensor>& ts, DType to) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(cast(t, to));
  return out;
}

}  // namespace ember::autocast
