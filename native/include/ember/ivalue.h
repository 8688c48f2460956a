#pragma once
// IValue: one boxed argument or result of an op call. Ops called by name (ember.ops.ns.op from
// Python, or Operator::call from C++) pass a Stack of these; typed kernels are boxed by
// make_boxed_kernel() in library.h.
#include <complex>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "ember/device.h"
#include "ember/dtype.h"
#include "ember/export.h"
#include "ember/generator.h"
#include "ember/tensor.h"

namespace ember {

class EMBER_API IValue {
 public:
  using Payload =
      std::variant<std::monostate, bool, int64_t, double, std::string, Tensor, IntList, std::vector<double>,
                   std::vector<Tensor>, DType, Device, std::shared_ptr<Generator>,
                   std::vector<std::optional<Tensor>>, std::complex<double>>;

  IValue() = default;
  IValue(bool v) : v_(v) {}                                           // NOLINT(google-explicit-constructor)
  IValue(int64_t v) : v_(v) {}                                        // NOLINT
  IValue(int v) : v_(static_cast<int64_t>(v)) {}                      // NOLINT
  IValue(double v) : v_(v) {}                                         // NOLINT
  IValue(std::complex<double> v) : v_(v) {}                           // NOLINT: a complex Scalar
  IValue(std::string v) : v_(std::move(v)) {}                         // NOLINT
  IValue(const char* v) : v_(std::string(v)) {}                       // NOLINT
  IValue(Tensor v) : v_(std::move(v)) {}                              // NOLINT
  IValue(IntList v) : v_(std::move(v)) {}                             // NOLINT
  IValue(std::vector<double> v) : v_(std::move(v)) {}                 // NOLINT
  IValue(std::vector<Tensor> v) : v_(std::move(v)) {}                 // NOLINT
  IValue(std::vector<std::optional<Tensor>> v) : v_(std::move(v)) {}  // NOLINT
  IValue(DType v) : v_(v) {}                                          // NOLINT
  IValue(Device v) : v_(v) {}                                         // NOLINT
  IValue(std::shared_ptr<Generator> v) {  // NOLINT: a null generator is None (the default one)
    if (v) v_ = std::move(v);
  }
  IValue(std::optional<Tensor> v) {  // NOLINT
    if (v) v_ = std::move(*v);
  }

  bool is_none() const { return std::holds_alternative<std::monostate>(v_); }
  template <typename T>
  bool is() const {
    return std::holds_alternative<T>(v_);
  }
  // Typed access; TypeError naming `what` and the held kind when the kind differs.
  template <typename T>
  const T& get(const char* what) const {
    if (const T* p = std::get_if<T>(&v_)) return *p;
    throw_kind_mismatch(what, kind_name_of<T>());
  }
  const char* kind() const;  // "None", "bool", "int", "float", "str", "Tensor", ...
  const Payload& payload() const { return v_; }

  template <typename T>
  static const char* kind_name_of();

 private:
  [[noreturn]] void throw_kind_mismatch(const char* what, const char* expected) const;
  Payload v_;
};

template <>
inline const char* IValue::kind_name_of<bool>() {
  return "bool";
}
template <>
inline const char* IValue::kind_name_of<int64_t>() {
  return "int";
}
template <>
inline const char* IValue::kind_name_of<double>() {
  return "float";
}
template <>
inline const char* IValue::kind_name_of<std::complex<double>>() {
  return "complex";
}
template <>
inline const char* IValue::kind_name_of<std::string>() {
  return "str";
}
template <>
inline const char* IValue::kind_name_of<Tensor>() {
  return "Tensor";
}
template <>
inline const char* IValue::kind_name_of<IntList>() {
  return "int[]";
}
template <>
inline const char* IValue::kind_name_of<std::vector<double>>() {
  return "float[]";
}
template <>
inline const char* IValue::kind_name_of<std::vector<Tensor>>() {
  return "Tensor[]";
}
template <>
inline const char* IValue::kind_name_of<std::vector<std::optional<Tensor>>>() {
  return "Tensor?[]";
}
template <>
inline const char* IValue::kind_name_of<DType>() {
  return "ScalarType";
}
template <>
inline const char* IValue::kind_name_of<Device>() {
  return "Device";
}
template <>
inline const char* IValue::kind_name_of<std::shared_ptr<Generator>>() {
  return "Generator";
}

using Stack = std::vector<IValue>;

// Calls fn on every Tensor of a stack, including those in Tensor[] and Tensor?[] entries.
template <typename Fn>
void for_each_tensor(const Stack& args, Fn fn) {
  for (const IValue& v : args) {
    if (v.is<Tensor>()) fn(v.get<Tensor>(""));
    if (v.is<std::vector<Tensor>>()) {
      for (const Tensor& t : v.get<std::vector<Tensor>>("")) fn(t);
    }
    if (v.is<std::vector<std::optional<Tensor>>>()) {
      for (const std::optional<Tensor>& t : v.get<std::vector<std::optional<Tensor>>>("")) {
        if (t) fn(*t);
      }
    }
  }
}

}  // namespace ember
