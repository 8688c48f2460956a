// encoder.json: a JSON object from token strings to integer IDs. A small strict parser, so the
// library needs no JSON dependency; errors name the line and column.
#include <limits>

#include "embertext/bpe.h"
#include "files.h"
#include "utf8.h"

namespace embertext {
namespace {

class Parser {
 public:
  Parser(std::string_view s, const std::string& name) : s_(s), name_(name) {}

  Encoder parse() {
    Encoder out;
    skip_ws();
    expect('{', "the file must hold one JSON object");
    skip_ws();
    if (peek() == '}') {
      ++i_;
    } else {
      while (true) {
        skip_ws();
        if (peek() != '"') fail("expected a string key");
        size_t key_at = i_;
        std::string key = string();
        skip_ws();
        expect(':', "expected ':' after a key");
        skip_ws();
        out.emplace_back(std::move(key), integer(key_at));
        skip_ws();
        if (peek() == ',') {
          ++i_;
          continue;
        }
        expect('}', "expected ',' or '}' after a value");
        break;
      }
    }
    skip_ws();
    if (i_ != s_.size()) fail("unexpected data after the object");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what, size_t at = std::string::npos) const {
    if (at == std::string::npos) at = i_;
    size_t line = 1, col = 1;
    for (size_t k = 0; k < at && k < s_.size(); ++k) {
      if (s_[k] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw FormatError(name_ + " line " + std::to_string(line) + " column " + std::to_string(col) + ": " +
                      what);
  }

  int peek() const { return i_ < s_.size() ? static_cast<unsigned char>(s_[i_]) : -1; }

  void expect(char c, const char* what) {
    if (peek() != c) fail(what);
    ++i_;
  }

  void skip_ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\r' || s_[i_] == '\t')) ++i_;
  }

  unsigned hex4() {
    if (i_ + 4 > s_.size()) fail("truncated \\u escape");
    unsigned v = 0;
    for (int k = 0; k < 4; ++k) {
      char c = s_[i_++];
      v <<= 4;
      if (c >= '0' && c <= '9') {
        v |= static_cast<unsigned>(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        v |= static_cast<unsigned>(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        v |= static_cast<unsigned>(c - 'A' + 10);
      } else {
        fail("bad hex digit in a \\u escape", i_ - 1);
      }
    }
    return v;
  }

  std::string string() {
    ++i_;  // the opening quote
    std::string out;
    while (true) {
      if (i_ >= s_.size()) fail("unterminated string");
      const auto c = static_cast<unsigned char>(s_[i_]);
      if (c == '"') {
        ++i_;
        return out;
      }
      if (c < 0x20) fail("control character in a string");
      if (c == '\\') {
        ++i_;
        if (i_ >= s_.size()) fail("unterminated string");
        const char e = s_[i_++];
        switch (e) {
          case '"': out += '"'; break;
          case '\\': out += '\\'; break;
          case '/': out += '/'; break;
          case 'b': out += '\b'; break;
          case 'f': out += '\f'; break;
          case 'n': out += '\n'; break;
          case 'r': out += '\r'; break;
          case 't': out += '\t'; break;
          case 'u': {
            size_t at = i_ - 2;
            unsigned cp = hex4();
            if (cp >= 0xD800 && cp <= 0xDBFF) {
              if (i_ + 2 > s_.size() || s_[i_] != '\\' || s_[i_ + 1] != 'u')
                fail("unpaired surrogate escape", at);
              i_ += 2;
              unsigned lo = hex4();
              if (lo < 0xDC00 || lo > 0xDFFF) fail("unpaired surrogate escape", at);
              cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
              fail("unpaired surrogate escape", at);
            }
            utf8::append(out, cp);
            break;
          }
          default: fail(std::string("bad escape '\\") + e + "'", i_ - 2);
        }
        continue;
      }
      if (c < 0x80) {
        out += static_cast<char>(c);
        ++i_;
        continue;
      }
      char32_t cp;
      const char* reason = nullptr;
      size_t n = utf8::decode(s_, i_, cp, &reason);
      if (n == 0) fail(std::string("invalid UTF-8 in a string (") + reason + ")");
      out.append(s_.data() + i_, n);
      i_ += n;
    }
  }

  int64_t integer(size_t key_at) {
    const size_t start = i_;
    if (peek() == '-') fail("token IDs must not be negative");
    if (peek() < '0' || peek() > '9') fail("expected an integer token ID");
    int64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + (s_[i_++] - '0');
      if (v > std::numeric_limits<int32_t>::max()) fail("token ID too large (the limit is 2^31 - 1)", start);
    }
    if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("token IDs must be integers", start);
    if (s_[start] == '0' && i_ - start > 1) fail("leading zeros are not JSON", start);
    (void)key_at;
    return v;
  }

  std::string_view s_;
  const std::string& name_;
  size_t i_ = 0;
};

}  // namespace

Encoder parse_encoder_json(std::string_view json, const std::string& name) {
  if (json.size() >= 3 && json.substr(0, 3) == "\xEF\xBB\xBF") json.remove_prefix(3);  // a UTF-8 BOM
  return Parser(json, name).parse();
}

Encoder read_encoder_json(const std::string& path) {
  return parse_encoder_json(read_file(path, "encoder file"), "encoder file '" + path + "'");
}

}  // namespace embertext
