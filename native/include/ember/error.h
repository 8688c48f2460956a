#pragma once
// Errors: C++ exceptions whose message reads "[op] expected <condition>, but got <values>".
// The Python binding maps each class to the exception PyTorch raises in the same situation.
#include <sstream>
#include <stdexcept>
#include <string>

#include "ember/export.h"

namespace ember {

class EMBER_API Error : public std::runtime_error {  // -> RuntimeError
 public:
  using std::runtime_error::runtime_error;
};
class EMBER_API IndexError : public Error {  // -> IndexError
 public:
  using Error::Error;
};
class EMBER_API ValueError : public Error {  // -> ValueError
 public:
  using Error::Error;
};
class EMBER_API TypeError : public Error {  // -> TypeError
 public:
  using Error::Error;
};
class EMBER_API NotImplementedError : public Error {  // -> NotImplementedError
 public:
  using Error::Error;
};
// A matrix a linalg op cannot factor (singular, not positive-definite, no convergence):
// ember.linalg.LinAlgError, a RuntimeError, as torch.linalg.LinAlgError is.
class EMBER_API LinAlgError : public Error {  // -> ember.linalg.LinAlgError
 public:
  using Error::Error;
};

// An allocation the system cannot satisfy: ember.OutOfMemoryError, a RuntimeError, as
// torch.OutOfMemoryError is (PyTorch's CPU allocator raises a plain RuntimeError; the subclass
// lets `except torch.OutOfMemoryError` ports catch it too).
class EMBER_API OutOfMemoryError : public Error {  // -> ember.OutOfMemoryError
 public:
  using Error::Error;
};

namespace detail {
template <typename... Args>
std::string str_cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}
}  // namespace detail

}  // namespace ember

// EMBER_CHECK(cond, ErrorClass, "[op] expected ...", ", but got ", value, ...)
#define EMBER_CHECK(cond, ErrorClass, ...)                                \
  do {                                                                    \
    if (!(cond)) throw ErrorClass(::ember::detail::str_cat(__VA_ARGS__)); \
  } while (0)
