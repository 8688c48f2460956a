#include "ember/ivalue.h"

#include "ember/error.h"

namespace ember {

const char* IValue::kind() const {
  static constexpr const char* kNames[] = {"None",   "bool",      "int",       "float",    "str",
                                           "Tensor", "int[]",     "float[]",   "Tensor[]", "ScalarType",
                                           "Device", "Generator", "Tensor?[]", "complex"};
  return kNames[v_.index()];
}

void IValue::throw_kind_mismatch(const char* what, const char* expected) const {
  throw TypeError(detail::str_cat("[ivalue] expected ", what, " to be ", expected, ", but got ", kind()));
}

}  // namespace ember
