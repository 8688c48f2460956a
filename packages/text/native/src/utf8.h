#pragma once
// Strict UTF-8 decoding and encoding (RFC 3629: no overlong forms, no surrogates, nothing past
// U+10FFFF). Internal to the library.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "embertext/error.h"

namespace embertext::utf8 {

// Decodes the code point at s[i] into cp and returns its length in bytes, or 0 (with `reason`
// set) if the bytes there are not valid UTF-8. The caller guarantees i < s.size().
inline size_t decode(std::string_view s, size_t i, char32_t& cp, const char** reason) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data()) + i;
  const size_t left = s.size() - i;
  const unsigned char b0 = p[0];
  if (b0 < 0x80) {
    cp = b0;
    return 1;
  }
  size_t n;
  char32_t min;
  if ((b0 & 0xE0) == 0xC0) {
    n = 2, min = 0x80, cp = b0 & 0x1F;
  } else if ((b0 & 0xF0) == 0xE0) {
    n = 3, min = 0x800, cp = b0 & 0x0F;
  } else if ((b0 & 0xF8) == 0xF0 && b0 <= 0xF4) {
    n = 4, min = 0x10000, cp = b0 & 0x07;
  } else {
    *reason = (b0 & 0xC0) == 0x80 ? "unexpected continuation byte" : "invalid start byte";
    return 0;
  }
  if (left < n) {
    // A truncated sequence: report it as such only if the bytes present are continuations.
    for (size_t k = 1; k < left; ++k) {
      if ((p[k] & 0xC0) != 0x80) {
        *reason = "invalid continuation byte";
        return 0;
      }
    }
    *reason = "unexpected end of data";
    return 0;
  }
  for (size_t k = 1; k < n; ++k) {
    if ((p[k] & 0xC0) != 0x80) {
      *reason = "invalid continuation byte";
      return 0;
    }
    cp = (cp << 6) | (p[k] & 0x3F);
  }
  if (cp < min) {
    *reason = "overlong encoding";
    return 0;
  }
  if (cp >= 0xD800 && cp <= 0xDFFF) {
    *reason = "encoded surrogate";
    return 0;
  }
  if (cp > 0x10FFFF) {
    *reason = "code point above U+10FFFF";
    return 0;
  }
  return n;
}

// decode() that throws Utf8Error instead of returning 0.
inline size_t decode_or_throw(std::string_view s, size_t i, char32_t& cp) {
  const char* reason = nullptr;
  size_t n = decode(s, i, cp, &reason);
  if (n == 0) throw Utf8Error(i, 1, reason);
  return n;
}

inline void append(std::string& out, char32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// Throws Utf8Error at the first invalid sequence of s; `what` names the input in the message.
void validate(std::string_view s);

}  // namespace embertext::utf8
