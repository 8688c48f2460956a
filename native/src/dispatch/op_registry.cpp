#include "ember/op_registry.h"

#include <algorithm>
#include <optional>
#include <set>

#include "ember/autocast.h"
#include "ember/dispatch_mode.h"
#include "ember/error.h"
#include "ember/library.h"
#include "ember/profiler.h"

namespace ember {

const char* dispatch_key_name(DispatchKey key) {
  switch (key) {
    case DispatchKey::CPU: return "CPU";
    case DispatchKey::CUDA: return "CUDA";
    case DispatchKey::Autograd: return "Autograd";
  }
  return "?";
}

DispatchKey backend_key(DeviceType type) {
  switch (type) {
    case DeviceType::CPU: return DispatchKey::CPU;
    case DeviceType::CUDA: return DispatchKey::CUDA;
    case DeviceType::MPS: break;
  }
  throw NotImplementedError(std::string("[dispatch] not implemented for ") + device_type_name(type));
}

namespace {
AutogradHooks& hooks_slot() {
  static AutogradHooks hooks;
  return hooks;
}
}  // namespace

void set_autograd_hooks(const AutogradHooks& hooks) {
  hooks_slot() = hooks;
}
const AutogradHooks& autograd_hooks() {
  return hooks_slot();
}

Operator::Operator(Schema schema, std::string defined_in)
    : schema_(std::move(schema)), defined_in_(std::move(defined_in)) {}

bool Operator::has_kernel(DispatchKey key) const {
  return static_cast<bool>(kernels_[static_cast<int>(key)]);
}

void Operator::set_kernel(DispatchKey key, BoxedKernel kernel) {
  EMBER_CHECK(!has_kernel(key), ValueError, "[", qualified_name(), "] expected one ", dispatch_key_name(key),
              " kernel, but one is already registered");
  kernels_[static_cast<int>(key)] = std::move(kernel);
}

namespace {

// An op's Tensor result may be undefined where it computes only what its mask asks for
// (convolution_backward's unneeded gradients; Python sees None, as in PyTorch).
bool matches(const ArgType& t, const IValue& v, bool undefined_ok) {
  if (v.is_none()) return t.is_optional;
  if (t.is_list) {
    switch (t.base) {
      case BaseType::Tensor:
        return t.elem_optional ? v.is<std::vector<std::optional<Tensor>>>() : v.is<std::vector<Tensor>>();
      case BaseType::Int: return v.is<IntList>();
      case BaseType::Float: return v.is<std::vector<double>>();
      default: return false;
    }
  }
  switch (t.base) {
    case BaseType::Tensor: return v.is<Tensor>() && (undefined_ok || v.get<Tensor>("").defined());
    case BaseType::Int: return v.is<int64_t>();
    case BaseType::Float: return v.is<double>();
    case BaseType::Bool: return v.is<bool>();
    case BaseType::Str: return v.is<std::string>();
    case BaseType::Scalar:
      return v.is<bool>() || v.is<int64_t>() || v.is<double>() || v.is<std::complex<double>>();
    case BaseType::ScalarType: return v.is<DType>();
    case BaseType::Device: return v.is<Device>();
    case BaseType::Generator: return v.is<std::shared_ptr<Generator>>();
  }
  return false;
}

void check_stack(const std::string& op, const std::vector<ArgType>& types,
                 const std::vector<std::string>& names, const Stack& stack, const char* what) {
  EMBER_CHECK(stack.size() == types.size(), TypeError, "[", op, "] expected ", types.size(), " ", what,
              "s, but got ", stack.size());
  for (size_t i = 0; i < types.size(); ++i) {
    EMBER_CHECK(matches(types[i], stack[i], std::string(what) == "result"), TypeError, "[", op, "] expected ",
                what, " ", names.empty() ? std::to_string(i) : "'" + names[i] + "'", " to be ",
                types[i].str(), ", but got ", stack[i].kind());
  }
}

}  // namespace

DispatchKey Operator::select_key(const Stack& args) const {
  std::optional<Device> device;
  bool requires_grad = false;
  const auto has_tangent = autograd_hooks().has_tangent;
  for_each_tensor(args, [&](const Tensor& t) {
    if (!t.defined()) return;
    if (!device) device = t.device();
    EMBER_CHECK(*device == t.device(), Error, "[", qualified_name(),
                "] expected all tensors to be on the same device, but got ", device->str(), " and ",
                t.device().str());
    requires_grad = requires_grad || t.impl()->requires_grad || (has_tangent != nullptr && has_tangent(t));
  });
  if (!device) {  // factory ops: the device argument decides
    for (const IValue& v : args) {
      if (v.is<Device>()) device = v.get<Device>("");
    }
  }
  const Device d = device.value_or(Device());
  // Note [dispatch keys] in op_registry.h; a dispatch mode's handler runs below autograd.
  if (requires_grad && !dispatch_mode::below_autograd() && has_kernel(DispatchKey::Autograd))
    return DispatchKey::Autograd;
  // Under autocast a built-in op goes through its generated entry point (the Autograd kernel),
  // which casts the inputs of ops with a policy first (Note [autocast] in ember/autocast.h).
  if (schema_.ns == "aten" && autocast::active() && has_kernel(DispatchKey::Autograd))
    return DispatchKey::Autograd;
  DispatchKey key;
  try {
    key = backend_key(d.type);
  } catch (const NotImplementedError&) {
    throw NotImplementedError("[" + qualified_name() + "] not implemented for " + d.str());
  }
  EMBER_CHECK(has_kernel(key), NotImplementedError, "[", qualified_name(), "] not implemented for ",
              device_type_name(d.type));
  return key;
}

Stack Operator::call(Stack args) const {
  std::vector<ArgType> types;
  std::vector<std::string> names;
  for (const Argument& a : schema_.arguments) {
    types.push_back(a.type);
    names.push_back(a.name);
  }
  check_stack(qualified_name(), types, names, args, "argument");
  // Built-in (aten) ops are recorded by their generated entry points; extension ops here.
  std::optional<profiler::RecordScope> record_scope;
  if (profiler::active() && schema_.ns != "aten") record_scope.emplace(qualified_name(), false);
  const DispatchKey key = select_key(args);
  const auto fallback = autograd_hooks().fallback;
  if (key == DispatchKey::Autograd || has_kernel(DispatchKey::Autograd) || fallback == nullptr)
    return call_key(key, std::move(args));
  return fallback(*this, key, std::move(args));  // Note [autograd hooks]
}

Stack Operator::call_key(DispatchKey key, Stack args) const {
  EMBER_CHECK(has_kernel(key), NotImplementedError, "[", qualified_name(), "] not implemented for ",
              dispatch_key_name(key));
  // Below autograd, an entered dispatch mode or a Python tensor's subclass takes the call
  // (Notes [dispatch modes], [Python tensors]).
  if (key != DispatchKey::Autograd && (dispatch_mode::active() || dispatch_mode::python_arguments(args))) {
    args = dispatch_mode::dispatch(*this, std::move(args));
    check_stack(qualified_name(), schema_.returns, {}, args, "result");
    return args;
  }
  kernels_[static_cast<int>(key)](args);
  check_stack(qualified_name(), schema_.returns, {}, args, "result");
  return args;
}

OpRegistry& OpRegistry::global() {
  static OpRegistry* registry = new OpRegistry();  // never destroyed: extensions outlive exit order
  return *registry;
}

Operator& OpRegistry::def(const std::string& schema_text, const std::string& defined_in) {
  Schema schema = Schema::parse(schema_text);
  EMBER_CHECK(!schema.ns.empty(), ValueError,
              "[def] expected a qualified op name such as 'myops::my_op', but got '", schema.name, "'");
  std::lock_guard<std::mutex> lock(mutex_);
  const std::string name = schema.qualified_name();
  auto it = ops_.find(name);
  EMBER_CHECK(it == ops_.end(), ValueError, "[def] expected a new op name, but '", name,
              "' is already defined (in ", it == ops_.end() ? "" : it->second->defined_in(), ")");
  auto op = std::make_unique<Operator>(std::move(schema), defined_in);
  Operator& ref = *op;
  ops_.emplace(name, std::move(op));
  return ref;
}

void OpRegistry::impl(const std::string& qualified_name, DispatchKey key, BoxedKernel kernel) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(qualified_name);
  EMBER_CHECK(it != ops_.end(), ValueError, "[impl] expected an op defined with def(), but '", qualified_name,
              "' is not defined");
  it->second->set_kernel(key, std::move(kernel));
}

const Operator* OpRegistry::find(const std::string& qualified_name) {
  run_pending_library_inits();
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(qualified_name);
  return it == ops_.end() ? nullptr : it->second.get();
}

const Operator& OpRegistry::get(const std::string& qualified_name) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = ops_.find(qualified_name);
  EMBER_CHECK(it != ops_.end(), ValueError, "[ops] expected a registered op, but '", qualified_name,
              "' is not defined");
  return *it->second;
}

std::vector<std::string> OpRegistry::names() {
  run_pending_library_inits();
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<std::string> out;
  for (const auto& kv : ops_) out.push_back(kv.first);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> OpRegistry::namespaces() {
  std::set<std::string> ns;
  for (const std::string& n : names()) ns.insert(n.substr(0, n.find("::")));
  return {ns.begin(), ns.end()};
}

}  // namespace ember
