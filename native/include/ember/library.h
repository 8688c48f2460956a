#pragma once
// Registering ops, the role torch.library / TORCH_LIBRARY play in PyTorch.
//
//   EMBER_LIBRARY(myops, m) {
//     m.def("scale_add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor");
//     m.impl("scale_add", ember::DispatchKey::CPU, &scale_add_cpu);
//   }
//
// Built-in ops and out-of-tree extensions use the same API. In an extension, EMBER_LIBRARY also
// records the core version the extension was compiled against (Note [extension build marker]),
// and ember.ops.load_library() refuses an extension built for another core minor before running
// any of its code. Use EMBER_LIBRARY once per namespace; one shared library may hold several.
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/error.h"
#include "ember/export.h"
#include "ember/op_registry.h"
#include "ember/scalar.h"
#include "ember/version.h"

namespace ember {

class Library;

namespace detail {

template <typename T>
struct ArgTypeOf;  // the schema type a C++ kernel parameter type accepts
#define EMBER_ARG_TYPE(cpp, base, list, opt)     \
  template <>                                    \
  struct ArgTypeOf<cpp> {                        \
    static ArgType get() {                       \
      return ArgType{BaseType::base, list, opt}; \
    }                                            \
  };
EMBER_ARG_TYPE(Tensor, Tensor, false, false)
EMBER_ARG_TYPE(std::optional<Tensor>, Tensor, false, true)
EMBER_ARG_TYPE(std::vector<Tensor>, Tensor, true, false)
template <>
struct ArgTypeOf<std::vector<std::optional<Tensor>>> {
  static ArgType get() { return ArgType{BaseType::Tensor, true, false, true}; }
};
EMBER_ARG_TYPE(int64_t, Int, false, false)
EMBER_ARG_TYPE(std::optional<int64_t>, Int, false, true)
EMBER_ARG_TYPE(IntList, Int, true, false)
EMBER_ARG_TYPE(double, Float, false, false)
EMBER_ARG_TYPE(std::optional<double>, Float, false, true)
EMBER_ARG_TYPE(std::vector<double>, Float, true, false)
EMBER_ARG_TYPE(bool, Bool, false, false)
EMBER_ARG_TYPE(std::string, Str, false, false)
EMBER_ARG_TYPE(DType, ScalarType, false, false)
EMBER_ARG_TYPE(std::optional<DType>, ScalarType, false, true)
EMBER_ARG_TYPE(Device, Device, false, false)
EMBER_ARG_TYPE(std::optional<Device>, Device, false, true)
EMBER_ARG_TYPE(std::optional<IntList>, Int, true, true)
EMBER_ARG_TYPE(std::optional<std::string>, Str, false, true)
EMBER_ARG_TYPE(Scalar, Scalar, false, false)
EMBER_ARG_TYPE(std::optional<Scalar>, Scalar, false, true)
EMBER_ARG_TYPE(std::shared_ptr<Generator>, Generator, false, true)
#undef EMBER_ARG_TYPE

template <typename T>
T unbox(const IValue& v, const char* what) {
  return v.get<T>(what);
}
template <typename T>
std::optional<T> unbox_optional(const IValue& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  return v.get<T>(what);
}
template <>
inline std::optional<Tensor> unbox<std::optional<Tensor>>(const IValue& v, const char* what) {
  return unbox_optional<Tensor>(v, what);
}
template <>
inline std::optional<int64_t> unbox<std::optional<int64_t>>(const IValue& v, const char* what) {
  return unbox_optional<int64_t>(v, what);
}
template <>
inline std::optional<double> unbox<std::optional<double>>(const IValue& v, const char* what) {
  return unbox_optional<double>(v, what);
}
template <>
inline std::optional<DType> unbox<std::optional<DType>>(const IValue& v, const char* what) {
  return unbox_optional<DType>(v, what);
}

// A Scalar argument arrives boxed as bool, int, float or complex.
template <>
inline Scalar unbox<Scalar>(const IValue& v, const char* what) {
  if (v.is<bool>()) return Scalar(v.get<bool>(what));
  if (v.is<int64_t>()) return Scalar(v.get<int64_t>(what));
  if (v.is<std::complex<double>>()) return Scalar(v.get<std::complex<double>>(what));
  return Scalar(v.get<double>(what));
}
template <>
inline std::optional<Scalar> unbox<std::optional<Scalar>>(const IValue& v, const char* what) {
  if (v.is_none()) return std::nullopt;
  return unbox<Scalar>(v, what);
}
template <>
inline std::optional<Device> unbox<std::optional<Device>>(const IValue& v, const char* what) {
  return unbox_optional<Device>(v, what);
}
template <>
inline std::optional<IntList> unbox<std::optional<IntList>>(const IValue& v, const char* what) {
  return unbox_optional<IntList>(v, what);
}
template <>
inline std::optional<std::string> unbox<std::optional<std::string>>(const IValue& v, const char* what) {
  return unbox_optional<std::string>(v, what);
}

template <>
inline std::shared_ptr<Generator> unbox<std::shared_ptr<Generator>>(const IValue& v, const char* what) {
  if (v.is_none()) return nullptr;  // the default generator
  return v.get<std::shared_ptr<Generator>>(what);
}

template <typename R>
void box_result(Stack& stack, R&& result) {
  stack.emplace_back(std::forward<R>(result));
}
template <typename... Ts>
void box_result(Stack& stack, std::tuple<Ts...>&& results) {
  std::apply([&](auto&&... r) { (stack.emplace_back(std::move(r)), ...); }, std::move(results));
}

template <typename R, typename... Args, size_t... I>
void call_unboxed(R (*fn)(Args...), Stack& stack, std::index_sequence<I...>) {
  // Arguments are converted before the stack is cleared: they may alias its tensors.
  auto args = std::make_tuple(unbox<std::decay_t<Args>>(stack[I], "argument")...);
  stack.clear();
  if constexpr (std::is_void_v<R>) {
    std::apply(fn, std::move(args));
  } else {
    box_result(stack, std::apply(fn, std::move(args)));
  }
}

EMBER_API void check_kernel_signature(const Schema& schema, const std::vector<ArgType>& params);

// Note [extension build marker]: each EMBER_LIBRARY embeds this string followed by the core
// version it was compiled against. load_library() reads it from the file, before dlopen, so a
// mismatched extension is refused without running its static initializers.
#define EMBER_EXTENSION_MARKER "EMBER_EXTENSION_BUILT_FOR_CORE="

// Called by EMBER_LIBRARY's static initializer; only queues (it must never throw while the
// dynamic loader runs). The queue is drained by load_library() or the next registry lookup.
EMBER_API void queue_library_init(const char* ns, void (*init)(Library&), const char* built_for,
                                  const char* file) noexcept;

struct LibraryRegistrar {
  LibraryRegistrar(const char* ns, void (*init)(Library&), const char* built_for, const char* file) noexcept {
    queue_library_init(ns, init, built_for, file);
  }
};

}  // namespace detail

class EMBER_API Library {
 public:
  Library(std::string ns, std::string defined_in);

  // Defines an op in this library's namespace ("scale_add(...)" or "myops::scale_add(...)").
  Library& def(const std::string& schema_text);

  // Registers a typed kernel; its parameter types must match the schema (ValueError if not).
  template <typename R, typename... Args>
  Library& impl(const std::string& name, DispatchKey key, R (*fn)(Args...)) {
    const Operator& op = OpRegistry::global().get(qualify(name));
    detail::check_kernel_signature(op.schema(), {detail::ArgTypeOf<std::decay_t<Args>>::get()...});
    return impl_boxed(name, key, [fn](Stack& stack) {
      detail::call_unboxed(fn, stack, std::index_sequence_for<Args...>{});
    });
  }
  Library& impl_boxed(const std::string& name, DispatchKey key, BoxedKernel kernel);

  // Declares the op's derivatives (ember/derivatives.h, included by ember/ember.h): registers
  // its Autograd kernel.
  Library& derivatives(const std::string& name, DerivativeFormulas formulas);

  const std::string& ns() const { return ns_; }

 private:
  std::string qualify(const std::string& name) const;
  std::string ns_;
  std::string defined_in_;
};

// Loads a shared library of ops (built with ember_add_extension() in CMake): checks its build
// marker against this core's version, dlopens it and registers its ops.
// ImportError for a core mismatch (the message names both versions and the compatibility
// page), OSError-like Error when the file cannot be loaded.
EMBER_API void load_library(const std::string& path);
// The core version recorded in an extension file's build marker; ValueError if it has none.
EMBER_API std::string extension_built_for(const std::string& path);
// ImportError unless an extension built for `built_for` can run on this core (same minor).
EMBER_API void check_core_compatible(const std::string& built_for, const std::string& what);
// Registers queued EMBER_LIBRARY blocks (already-loaded extensions, built-in ops).
EMBER_API void run_pending_library_inits();

class EMBER_API ImportError : public Error {  // -> ImportError
 public:
  using Error::Error;
};
class EMBER_API OSError : public Error {  // -> OSError
 public:
  using Error::Error;
};

}  // namespace ember

#define EMBER_CONCAT_IMPL(a, b) a##b
#define EMBER_CONCAT(a, b) EMBER_CONCAT_IMPL(a, b)

#define EMBER_LIBRARY(ns, m)                                                                 \
  static void EMBER_CONCAT(ember_library_init_, ns)(::ember::Library&);                      \
  __attribute__((used)) static const char EMBER_CONCAT(ember_build_marker_, ns)[] =          \
      EMBER_EXTENSION_MARKER EMBER_VERSION_STRING;                                           \
  static const ::ember::detail::LibraryRegistrar EMBER_CONCAT(ember_library_registrar_, ns)( \
      #ns, &EMBER_CONCAT(ember_library_init_, ns), EMBER_VERSION_STRING, __FILE__);          \
  static void EMBER_CONCAT(ember_library_init_, ns)(::ember::Library & m)
