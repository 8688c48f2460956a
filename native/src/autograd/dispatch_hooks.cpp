// The autograd layer's part of dispatch (Note [autograd hooks] in ember/op_registry.h): the
// dispatcher below asks through these hooks whether a tensor carries a tangent, what to do with
// an op that has no Autograd kernel, and how to build the kernel of declared derivatives.
#include <vector>

#include "ember/autograd.h"
#include "ember/derivatives.h"
#include "ember/op_registry.h"

namespace ember {
namespace {

bool has_tangent(const Tensor& t) {
  return forward_ad::any_tangent({&t});
}

// An op without declared derivatives (an extension's) must not look differentiable: its
// floating outputs raise when backward reaches them, and a tangent raises now.
Stack not_differentiable_fallback(const Operator& op, DispatchKey backend, Stack args) {
  const std::string name = op.qualified_name();
  std::vector<Tensor> inputs;
  bool needed = false;
  for_each_tensor(args, [&](const Tensor& t) {
    if (!t.defined()) return;
    inputs.push_back(t);
    needed = needed || autograd::any_requires_grad({&t});
    if (forward_ad::any_tangent({&t})) forward_ad::not_implemented(name.c_str());
  });
  Stack out = op.call_key(backend, std::move(args));
  if (!needed) return out;
  for (IValue& v : out) {
    if (!v.is<Tensor>()) continue;
    Tensor r = v.get<Tensor>("result");
    autograd::set_history({&r}, autograd::not_implemented(name.c_str()), inputs);
    v = IValue(r);
  }
  return out;
}

// Filled when libember loads, before any op can be called.
const bool registered = [] {
  AutogradHooks hooks;
  hooks.has_tangent = &has_tangent;
  hooks.fallback = &not_differentiable_fallback;
  hooks.derivative_kernel = &derivative_kernel;
  set_autograd_hooks(hooks);
  return true;
}();

}  // namespace
}  // namespace ember
