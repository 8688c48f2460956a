// The error classes are header-only; this file anchors their vtables (and type_info) in
// libember so that an exception thrown in an extension is caught as the same type here.
#include "ember/error.h"

namespace ember {
namespace {
[[maybe_unused]] void anchor() {
  try {
    throw Error("");
  } catch (const Error&) {
  }
}
}  // namespace
}  // namespace ember
