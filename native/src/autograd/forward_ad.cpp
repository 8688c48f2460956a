// Forward-mode AD: dual levels and tangents (interface in ember/autograd.h; the per-op JVP
// formulas are generated into autograd_ops.cpp from native/ops/declarations.py).
#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "autograd/formulas_select.h"
#include "ember/autograd.h"
#include "ember/dispatch_mode.h"
#include "ember/error.h"
#include "ember/ops.h"

namespace ember::forward_ad {

namespace {

// Levels are global (a tangent set on one thread is seen by all), as PyTorch's are; pausing is
// per thread. 0 means no level is active.
std::atomic<uint64_t> active_level{0};
uint64_t last_level = 0;
std::mutex levels_mutex;
// The slots holding a tangent of the active level, cleared when it exits.
std::vector<std::weak_ptr<ForwardGrad>> holders;
thread_local bool paused = false;

std::string dims_text(const IntList& sizes) {
  std::string s = "[";
  for (size_t i = 0; i < sizes.size(); ++i) s += (i ? ", " : "") + std::to_string(sizes[i]);
  return s + "]";
}

bool differentiable(DType d) {
  return is_floating_point(d) || is_complex(d);
}

}  // namespace

uint64_t enter_dual_level() {
  std::lock_guard<std::mutex> lock(levels_mutex);
  EMBER_CHECK(active_level.load() == 0, NotImplementedError,
              "[enter_dual_level] Nested forward mode AD is not supported at the moment");
  active_level.store(++last_level);
  return last_level;
}

void exit_dual_level(uint64_t level) {
  std::vector<std::weak_ptr<ForwardGrad>> to_clear;
  {
    std::lock_guard<std::mutex> lock(levels_mutex);
    EMBER_CHECK(level != 0 && active_level.load() == level, Error,
                "[exit_dual_level] Trying to exit a forward AD level ", level,
                " that was not the last one created");
    active_level.store(0);
    to_clear.swap(holders);
  }
  for (auto& weak : to_clear) {
    if (auto slot = weak.lock(); slot && slot->level == level) {
      slot->value = Tensor();
      slot->level = 0;
    }
  }
}

bool enabled() {
  return active_level.load(std::memory_order_relaxed) != 0 && !paused;
}

namespace {

// The tangent stored on `t` for the active level (undefined if none), pausing aside.
Tensor stored_tangent(const Tensor& t) {
  const auto& m = t.impl()->autograd_meta;
  if (!m || !m->fw || !m->fw->value.defined() || m->fw->level != active_level.load()) return Tensor();
  return m->fw->value;
}

// Note [tangents of views]: a view's tangent is the view's part of its base's tangent. Each
// tensor keeps its own tangent, so after an in-place write the written view's new tangent is
// copied into the base's (set_tangent with written_in_place), and a view whose tangent was set
// at an older version than the memory's (another alias was written since) reads it again from
// the base's. Both go through storage positions, as CopySlices does for gradients.
Tensor view_part_of_base(const Tensor& view, const Tensor& base, const Tensor& base_t) {
  return autograd::as_strided_through_storage(base_t, base.sizes(), base.strides(), base.storage_offset(),
                                              view.sizes(), view.strides(), view.storage_offset(), false);
}

Tensor base_with_view_part(const Tensor& base, const Tensor& base_t, const Tensor& view,
                           const Tensor& view_t) {
  const Device device = base.device();
  const Tensor base_at =
      autograd::storage_positions(base.sizes(), base.strides(), base.storage_offset(), device);
  const Tensor view_at =
      autograd::storage_positions(view.sizes(), view.strides(), view.storage_offset(), device);
  const int64_t extent =
      std::max(autograd::storage_extent(base.sizes(), base.strides(), base.storage_offset()),
               autograd::storage_extent(view.sizes(), view.strides(), view.storage_offset()));
  Tensor memory = autograd::index_add(autograd::zeros_shaped(IntList{extent}, base_t), 0, base_at,
                                      autograd::flat(base_t), Scalar(int64_t(1)));
  memory = autograd::index_copy(memory, 0, view_at, autograd::flat(view_t));
  return autograd::reshape(autograd::index_select(memory, 0, base_at), base.sizes());
}

bool tangent_is_current(const Tensor& t) {
  const auto& m = t.impl()->autograd_meta;
  return m && m->fw && m->fw->value.defined() && m->fw->level == active_level.load() &&
         m->fw->version == t.version();
}

}  // namespace

Tensor tangent(const Tensor& t) {
  if (!t.defined() || !enabled()) return Tensor();
  const auto& m = t.impl()->autograd_meta;
  if (!m) return Tensor();
  if (m->view_base.defined() && !tangent_is_current(t) && m->view_base.dtype() == t.dtype()) {
    const Tensor base_t = stored_tangent(m->view_base);
    if (base_t.defined()) {
      PauseGuard pause;
      set_tangent(t, view_part_of_base(t, m->view_base, base_t));
    }
  }
  return stored_tangent(t);
}

bool any_tangent(std::initializer_list<const Tensor*> tensors) {
  if (!enabled() || dispatch_mode::below_autograd()) return false;
  for (const Tensor* t : tensors) {
    if (t && tangent(*t).defined()) return true;
  }
  return false;
}

bool any_tangent(const std::vector<Tensor>& tensors) {
  if (!enabled() || dispatch_mode::below_autograd()) return false;
  for (const Tensor& t : tensors) {
    if (tangent(t).defined()) return true;
  }
  return false;
}

Tensor tangent_or_zeros(const Tensor& t) {
  if (!t.defined()) return Tensor();
  Tensor found = tangent(t);
  if (found.defined()) return found;
  PauseGuard pause;
  Tensor zero = autograd::zeros_like(t, std::nullopt);
  // a Python number's tangent is a number too, so ops that take one (scatter's value) take it
  zero.impl()->is_wrapped_number = t.impl()->is_wrapped_number;
  return zero;
}

std::vector<Tensor> tangents_or_zeros(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  out.reserve(ts.size());
  for (const Tensor& t : ts) out.push_back(tangent_or_zeros(t));
  return out;
}

void set_tangent(const Tensor& t, const Tensor& tangent_value, bool written_in_place) {
  if (!t.defined()) return;
  const uint64_t level = active_level.load();
  if (level == 0) return;
  AutogradMeta& m = autograd::meta(t);
  if (!tangent_value.defined() || !differentiable(t.dtype())) {
    if (m.fw) *m.fw = ForwardGrad{};
    return;
  }
  PauseGuard pause;
  Tensor value = tangent_value;
  if (value.sizes() != t.sizes()) value = autograd::expand(value, t.sizes());
  if (is_complex(value.dtype()) && !is_complex(t.dtype())) value = autograd::real(value);
  if (value.dtype() != t.dtype()) value = autograd::to_dtype(value, t.dtype(), false);
  if (!m.fw) m.fw = std::make_shared<ForwardGrad>();
  const bool registered = m.fw->level == level;
  m.fw->value = value;
  m.fw->level = level;
  m.fw->version = t.version();
  if (!registered) {
    std::lock_guard<std::mutex> lock(levels_mutex);
    holders.push_back(m.fw);
  }
  const Tensor base = m.view_base;
  if (written_in_place && base.defined() && base.dtype() == t.dtype()) {  // Note [tangents of views]
    Tensor base_t = stored_tangent(base);
    if (!base_t.defined()) base_t = autograd::zeros_like(base, std::nullopt);
    set_tangent(base, base_with_view_part(base, base_t, t, value));
  }
}

Tensor make_dual(const Tensor& primal, const Tensor& tangent_value) {
  EMBER_CHECK(active_level.load() != 0, Error,
              "[make_dual] make_dual can only be used inside a dual level (with forward_ad.dual_level())");
  EMBER_CHECK(primal.defined() && tangent_value.defined(), TypeError, "[make_dual] expected two Tensors");
  EMBER_CHECK(
      differentiable(primal.dtype()), TypeError,
      "[make_dual] Expected primal to be floating point or complex, but got: ", dtype_name(primal.dtype()));
  EMBER_CHECK(differentiable(tangent_value.dtype()), TypeError,
              "[make_dual] Expected tangent to be floating point or complex, but got: ",
              dtype_name(tangent_value.dtype()));
  EMBER_CHECK(
      tangent_value.sizes() == primal.sizes(), ValueError,
      "[make_dual] Trying to set a forward gradient that has a different size than that of the original "
      "Tensor, this is not supported. Tensor is of size ",
      dims_text(primal.sizes()), " while the given forward gradient is of size ",
      dims_text(tangent_value.sizes()), ".");
  EMBER_CHECK(tangent_value.dtype() == primal.dtype(), TypeError,
              "[make_dual] Expected tangent to have the same dtype as the primal (",
              dtype_name(primal.dtype()), "), but got ", dtype_name(tangent_value.dtype()));
  EMBER_CHECK(tangent_value.device() == primal.device(), ValueError,
              "[make_dual] Expected tangent to be on the same device as the primal");
  Tensor dual = primal_view(primal);
  set_tangent(dual, tangent_value);
  return dual;
}

Tensor primal_view(const Tensor& t) {
  PauseGuard pause;  // a view of t (differentiable in reverse mode) that carries no tangent
  return autograd::view(t, t.sizes());
}

void not_implemented(const char* op) {
  throw NotImplementedError(std::string("[") + op + "] Trying to use forward AD with " + op +
                            " that does not support it because it has not been implemented yet.");
}

bool set_paused(bool value) {
  const bool prev = paused;
  paused = value;
  return prev;
}

PauseGuard::PauseGuard() : prev_(paused) {
  paused = true;
}
PauseGuard::~PauseGuard() {
  paused = prev_;
}

}  // namespace ember::forward_ad
