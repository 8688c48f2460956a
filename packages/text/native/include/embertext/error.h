#pragma once
// The library's exceptions. Every bad input (invalid UTF-8, malformed vocab or merges files, bad
// arguments) throws one of these; nothing aborts the process.
#include <cstddef>
#include <stdexcept>
#include <string>

#include "embertext/export.h"

namespace embertext {

// Base of every embertext exception.
class EMBERTEXT_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  ~Error() override;
};

// Input text is not valid UTF-8. `offset` is the byte where the bad sequence starts.
class EMBERTEXT_API Utf8Error : public Error {
 public:
  Utf8Error(size_t offset, size_t length, const std::string& reason);
  ~Utf8Error() override;
  size_t offset() const { return offset_; }
  size_t length() const { return length_; }  // bytes of the bad sequence (at least 1)
  const std::string& reason() const { return reason_; }

 private:
  size_t offset_;
  size_t length_;
  std::string reason_;
};

// A vocab, encoder or merges file (or its in-memory equivalent) is malformed.
class EMBERTEXT_API FormatError : public Error {
 public:
  explicit FormatError(const std::string& what) : Error(what) {}
  ~FormatError() override;
};

// A file could not be opened or read.
class EMBERTEXT_API FileError : public Error {
 public:
  explicit FileError(const std::string& what) : Error(what) {}
  ~FileError() override;
};

// An argument is out of its domain (an unknown id, a negative length, ...).
class EMBERTEXT_API ArgumentError : public Error {
 public:
  explicit ArgumentError(const std::string& what) : Error(what) {}
  ~ArgumentError() override;
};

}  // namespace embertext
