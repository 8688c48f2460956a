#pragma once
// The op registry: every op, built in or loaded from an extension, is one Operator here,
// found by its qualified name "ns::name". An Operator holds its schema and one boxed kernel
// per dispatch key; a call picks the key from its tensor arguments' device.
//
// Note [dispatch keys]: keys are tried in order Autograd (when an input requires grad and the
// op has an autograd kernel; that kernel records the graph and redispatches below itself),
// then the backend of the inputs' device. A missing backend kernel raises
// NotImplementedError("[ns::op] not implemented for <device>") — never a silent fallback.
#include <array>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ember/export.h"
#include "ember/ivalue.h"
#include "ember/schema.h"
#include "ember/tensor.h"

namespace ember {

enum class DispatchKey : uint8_t { CPU = 0, CUDA = 1, Autograd = 2 };
constexpr int kNumDispatchKeys = 3;
EMBER_API const char* dispatch_key_name(DispatchKey key);
EMBER_API DispatchKey backend_key(DeviceType type);  // NotImplementedError for devices without one

// A boxed kernel receives the op's arguments on the stack (in schema order) and leaves the
// op's results there.
using BoxedKernel = std::function<void(Stack&)>;

class Operator;
class FormulaContext;  // ember/derivatives.h
// An extension op's derivatives (Library::derivatives; ember/derivatives.h explains them).
using DerivativeFormula = std::function<Tensor(const FormulaContext&)>;
using DerivativeFormulas = std::vector<std::pair<std::string, DerivativeFormula>>;

// Note [autograd hooks]: the dispatcher sits below autograd (core < dispatch < ops < autograd)
// and never calls it by name. The autograd layer fills these hooks when libember loads
// (src/autograd/dispatch_hooks.cpp), as PyTorch registers its Autograd-key fallback; until
// then (or in a build without autograd) no tensor takes part and no fallback runs.
struct AutogradHooks {
  // Whether `t` carries a forward-mode tangent (a call on it is differentiable, as one on a
  // tensor that requires grad is).
  bool (*has_tangent)(const Tensor& t) = nullptr;
  // The Autograd-key fallback, for an op without an Autograd kernel (an extension's without
  // declared derivatives): runs the op's `backend` kernel on `args`, then makes its outputs
  // raise when backward reaches them (and raises at once for a tangent).
  Stack (*fallback)(const Operator& op, DispatchKey backend, Stack args) = nullptr;
  // The Autograd kernel computing `formulas` for `op` (Library::derivatives).
  BoxedKernel (*derivative_kernel)(const Operator& op, DerivativeFormulas formulas) = nullptr;
};
EMBER_API void set_autograd_hooks(const AutogradHooks& hooks);
EMBER_API const AutogradHooks& autograd_hooks();

class EMBER_API Operator {
 public:
  Operator(Schema schema, std::string defined_in);
  const Schema& schema() const { return schema_; }
  const std::string& defined_in() const { return defined_in_; }
  std::string qualified_name() const { return schema_.qualified_name(); }
  bool has_kernel(DispatchKey key) const;
  void set_kernel(DispatchKey key, BoxedKernel kernel);

  // Checks the stack against the schema (count and kinds), dispatches, checks the results.
  Stack call(Stack args) const;
  // Calls the kernel of one key directly (used by layers that redispatch below themselves).
  Stack call_key(DispatchKey key, Stack args) const;

 private:
  DispatchKey select_key(const Stack& args) const;
  Schema schema_;
  std::string defined_in_;
  std::array<BoxedKernel, kNumDispatchKeys> kernels_;
};

class EMBER_API OpRegistry {
 public:
  static OpRegistry& global();

  // Defines an op; ValueError if the name is taken (the message names where it was defined).
  Operator& def(const std::string& schema_text, const std::string& defined_in);
  // Registers a kernel; ValueError if the op is unknown or that key already has one.
  void impl(const std::string& qualified_name, DispatchKey key, BoxedKernel kernel);
  // nullptr when absent. Runs pending extension registrations first.
  const Operator* find(const std::string& qualified_name);
  const Operator& get(const std::string& qualified_name);  // AttributeError-like ValueError if absent
  std::vector<std::string> names();
  std::vector<std::string> namespaces();

 private:
  OpRegistry() = default;
  std::mutex mutex_;
  std::unordered_map<std::string, std::unique_ptr<Operator>> ops_;
};

}  // namespace ember
