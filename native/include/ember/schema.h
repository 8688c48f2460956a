#pragma once
// An op's schema, written as in PyTorch's native_functions.yaml:
//   "myops::scale_add(Tensor x, Tensor y, *, float alpha=1.0) -> Tensor"
// Types: Tensor, Tensor?, Tensor[], Tensor?[], int, int?, int[], float, float?, float[], bool, bool?, str,
// str?, Scalar, Scalar?, ScalarType, ScalarType?, Device, Device?, Generator?. Defaults: numbers, True,
// False, None, quoted strings, [lists of numbers]. Arguments after `*` are keyword-only.
#include <optional>
#include <string>
#include <vector>

#include "ember/export.h"
#include "ember/ivalue.h"

namespace ember {

enum class BaseType { Tensor, Int, Float, Bool, Str, Scalar, ScalarType, Device, Generator };

struct EMBER_API ArgType {
  BaseType base = BaseType::Tensor;
  bool is_list = false;
  bool is_optional = false;
  bool elem_optional = false;  // Tensor?[]: list elements may be None
  std::string str() const;     // "Tensor?", "int[]", "Tensor?[]"
  bool operator==(const ArgType& o) const {
    return base == o.base && is_list == o.is_list && is_optional == o.is_optional &&
           elem_optional == o.elem_optional;
  }
};

struct Argument {
  std::string name;
  ArgType type;
  std::optional<IValue> default_value;
  bool kwarg_only = false;
};

struct EMBER_API Schema {
  std::string ns;    // "myops"
  std::string name;  // "scale_add"
  std::vector<Argument> arguments;
  std::vector<ArgType> returns;

  std::string qualified_name() const { return ns + "::" + name; }
  std::string str() const;  // canonical text, parseable again
  // ValueError with the position of the problem when `text` is not a valid schema.
  static Schema parse(const std::string& text);
};

}  // namespace ember
