#pragma once
// Reading whole files, and naming lines in error messages. Internal to the library.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "embertext/error.h"

namespace embertext {

inline std::string read_file(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw FileError(std::string("cannot open ") + what + " '" + path + "': " + std::strerror(errno));
  std::ostringstream buffer;
  buffer << in.rdbuf();
  if (in.bad()) throw FileError(std::string("cannot read ") + what + " '" + path + "'");
  return buffer.str();
}

// "'token'" for messages, with control characters escaped and long tokens shortened.
inline std::string quoted(std::string_view s) {
  std::string out = "'";
  size_t n = 0;
  for (char c : s) {
    if (++n > 60) {
      out += "...";
      break;
    }
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7F) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;
    }
  }
  return out + "'";
}

}  // namespace embertext
