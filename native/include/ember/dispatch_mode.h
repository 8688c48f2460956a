#pragma once
// Note [dispatch modes]: torch.utils._python_dispatch.TorchDispatchMode, the per-op interception
// PyTorch runs at its Python dispatch key. While a mode is entered on a thread, every op call on
// that thread that reaches below autograd is handed to a handler (the Python bindings install it:
// it calls the innermost mode's __torch_dispatch__) instead of its kernel:
//   - a built-in op reaches its generated <op>_backend (after autograd and vmap, before the
//     kernel; autograd_ops.cpp), which boxes the arguments and calls redirect();
//   - an op called by name (ember.ops.<ns>.<op>, extension ops) reaches Operator::call_key for a
//     backend key.
// The handler runs below autograd (BelowAutogradGuard): ops it calls record no graph, carry no
// tangent and are not autocast again, since the call that reached it already did all three.
// Threads without a mode pay one relaxed atomic load per op.
//
// Note [Python tensors]: PyTorch's __torch_dispatch__ on tensor subclasses. A tensor made by
// Tensor._make_wrapper_subclass / _make_subclass for a subclass defining __torch_dispatch__ carries
// TensorImpl::python_state; an op call with such a tensor among its arguments reaches the same
// handler at the same place as a mode (after modes, which come first), and the handler calls the
// subclass's __torch_dispatch__. A wrapper subclass's tensor has no memory of its own: reading its
// data raises. Until the first such tensor is made, ops pay one relaxed atomic load for this.
#include <atomic>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/error.h"
#include "ember/export.h"
#include "ember/library.h"
#include "ember/op_registry.h"
#include "ember/scalar.h"

namespace ember::dispatch_mode {

// Runs the innermost mode for `op`, given its arguments in schema order; returns its results in
// schema order, already checked against the schema's return types.
using Handler = Stack (*)(const Operator& op, Stack args);
EMBER_API void set_handler(Handler handler);

// Whether this thread has a mode to hand ops to (the bindings keep the stack of modes; this is
// false while the only mode runs its own __torch_dispatch__). Returns the previous value.
EMBER_API bool set_active(bool active);
EMBER_API bool active_on_this_thread();
EMBER_API extern std::atomic<int> threads_with_modes;
EMBER_API bool python_dispatch_enabled();
inline bool active() {
  return threads_with_modes.load(std::memory_order_relaxed) > 0 && active_on_this_thread() &&
         python_dispatch_enabled();
}

// Note [Python tensors]: set once the first Python tensor is made, never cleared.
EMBER_API extern std::atomic<bool> python_tensors_exist;
// This thread's switch for modes and Python tensors alike (torch._C._DisableTorchDispatch): while
// off, ops run their kernels. Returns the previous value.
EMBER_API bool set_python_dispatch_enabled(bool enabled);

inline bool is_python_tensor(const Tensor& t) {
  return t.defined() && t.impl()->python_state != nullptr;
}
inline bool is_python_tensor(const std::optional<Tensor>& t) {
  return t && is_python_tensor(*t);
}
inline bool is_python_tensor(const std::vector<Tensor>& ts) {
  for (const Tensor& t : ts)
    if (is_python_tensor(t)) return true;
  return false;
}
inline bool is_python_tensor(const std::vector<std::optional<Tensor>>& ts) {
  for (const std::optional<Tensor>& t : ts)
    if (is_python_tensor(t)) return true;
  return false;
}
template <typename T>
bool is_python_tensor(const T&) {
  return false;
}
// Whether a built-in op's arguments include a Python tensor that is to dispatch.
template <typename... Args>
bool python_arguments(const Args&... args) {
  return python_tensors_exist.load(std::memory_order_relaxed) && (is_python_tensor(args) || ...) &&
         python_dispatch_enabled();
}
// The same for an op called by name.
EMBER_API bool python_arguments(const Stack& args);

// True inside a handler: autograd, forward AD and autocast let ops through untouched.
EMBER_API bool below_autograd();
struct EMBER_API BelowAutogradGuard {
  BelowAutogradGuard();
  ~BelowAutogradGuard();
  BelowAutogradGuard(const BelowAutogradGuard&) = delete;
  BelowAutogradGuard& operator=(const BelowAutogradGuard&) = delete;

 private:
  bool previous_;
};

// Hands `args` to the handler, below autograd. NotImplementedError-free: the handler must exist
// while a mode is active (the bindings install it before any mode can be entered).
EMBER_API Stack dispatch(const Operator& op, Stack args);

// The registered op a generated <op>_backend hands over (its registration may still be queued).
EMBER_API const Operator& registered(const char* qualified_name);

namespace detail {

// A C++ argument as the registry boxes it (a Scalar as bool, int, float or complex; an empty
// optional as None).
template <typename T>
IValue box(const T& v) {
  return IValue(v);
}
EMBER_API IValue box_scalar(const Scalar& s);
template <typename T>
IValue box(const std::optional<T>& v) {
  return v ? box(*v) : IValue();
}

template <typename R>
struct Unboxed {
  static R from(Stack& results) { return ember::detail::unbox<R>(results.at(0), "result"); }
};
template <typename... Ts>
struct Unboxed<std::tuple<Ts...>> {
  static std::tuple<Ts...> from(Stack& results) { return take(results, std::index_sequence_for<Ts...>{}); }
  template <size_t... I>
  static std::tuple<Ts...> take(Stack& results, std::index_sequence<I...>) {
    return std::tuple<Ts...>(ember::detail::unbox<Ts>(results.at(I), "result")...);
  }
};

}  // namespace detail

// The call a generated <op>_backend makes while a mode is active.
template <typename R, typename... Args>
R redirect(const Operator& op, const Args&... args) {
  Stack stack;
  stack.reserve(sizeof...(Args));
  (stack.push_back([&] {
    if constexpr (std::is_same_v<Args, Scalar>) {
      return detail::box_scalar(args);
    } else if constexpr (std::is_same_v<Args, std::optional<Scalar>>) {
      return args ? detail::box_scalar(*args) : IValue();
    } else {
      return detail::box(args);
    }
  }()),
   ...);
  Stack results = dispatch(op, std::move(stack));
  if constexpr (!std::is_same_v<R, std::tuple<>>) {
    return detail::Unboxed<R>::from(results);
  } else {
    return {};
  }
}

}  // namespace ember::dispatch_mode
