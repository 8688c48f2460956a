// Parser for op schemas (grammar in ember/schema.h).
#include "ember/schema.h"

#include <cctype>
#include <sstream>

#include "ember/error.h"

namespace ember {
namespace {

class Parser {
 public:
  explicit Parser(const std::string& text) : s_(text) {}

  Schema schema() {
    Schema out;
    std::string first = ident("op name");
    if (consume("::")) {
      out.ns = first;
      out.name = ident("op name");
    } else {
      out.name = first;
    }
    expect("(");
    bool kwarg_only = false;
    if (!consume(")")) {
      do {
        if (consume("*")) {
          kwarg_only = true;
          continue;
        }
        Argument arg;
        arg.type = type();
        arg.name = ident("argument name");
        arg.kwarg_only = kwarg_only;
        if (consume("=")) arg.default_value = default_value(arg.type);
        for (const Argument& prev : out.arguments) {
          if (prev.name == arg.name) fail("a unique argument name, but '" + arg.name + "' repeats");
        }
        if (!arg.default_value && !arg.kwarg_only && !out.arguments.empty() &&
            out.arguments.back().default_value && !out.arguments.back().kwarg_only) {
          fail("positional arguments without defaults before those with defaults");
        }
        out.arguments.push_back(std::move(arg));
      } while (consume(","));
      expect(")");
    }
    expect("->");
    if (consume("(")) {
      if (!consume(")")) {
        do {
          out.returns.push_back(type());
          skip_optional_name();
        } while (consume(","));
        expect(")");
      }
    } else {
      out.returns.push_back(type());
      skip_optional_name();
    }
    skip_space();
    if (pos_ != s_.size()) fail("the end of the schema");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& expected) const {
    throw ValueError("[schema] expected " + expected + " at position " + std::to_string(pos_) +
                     ", but got '" + s_ + "'");
  }
  void skip_space() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  bool consume(const std::string& tok) {
    skip_space();
    if (s_.compare(pos_, tok.size(), tok) == 0) {
      pos_ += tok.size();
      return true;
    }
    return false;
  }
  void expect(const std::string& tok) {
    if (!consume(tok)) fail("'" + tok + "'");
  }
  bool at_ident() {
    skip_space();
    return pos_ < s_.size() && (std::isalpha(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_');
  }
  std::string ident(const char* what) {
    if (!at_ident()) fail(what);
    const size_t start = pos_;
    while (pos_ < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '_')) {
      ++pos_;
    }
    return s_.substr(start, pos_ - start);
  }
  void skip_optional_name() {
    if (at_ident()) ident("return name");
  }

  ArgType type() {
    const std::string name = ident("a type");
    ArgType t;
    if (name == "Tensor")
      t.base = BaseType::Tensor;
    else if (name == "int" || name == "SymInt")
      t.base = BaseType::Int;
    else if (name == "float")
      t.base = BaseType::Float;
    else if (name == "bool")
      t.base = BaseType::Bool;
    else if (name == "str")
      t.base = BaseType::Str;
    else if (name == "Scalar")
      t.base = BaseType::Scalar;
    else if (name == "ScalarType")
      t.base = BaseType::ScalarType;
    else if (name == "Device")
      t.base = BaseType::Device;
    else if (name == "Generator")
      t.base = BaseType::Generator;
    else
      fail("a type (Tensor, int, float, bool, str, Scalar, ScalarType, Device, Generator), not '" + name +
           "'");
    // Tensor?[]: a list whose elements may be None (advanced indexing's index list).
    if (s_.compare(pos_, 2, "?[") == 0) {
      if (t.base != BaseType::Tensor) fail("element-optional lists only of Tensor (Tensor?[])");
      ++pos_;
      t.elem_optional = true;
    }
    if (consume("[")) {
      while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
      expect("]");
      t.is_list = true;
    }
    if (consume("?")) t.is_optional = true;
    return t;
  }

  IValue number(const ArgType& t) {
    skip_space();
    const size_t start = pos_;
    if (pos_ < s_.size() && (s_[pos_] == '-' || s_[pos_] == '+')) ++pos_;
    bool is_float = false;
    while (pos_ < s_.size() &&
           (std::isalnum(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.' ||
            ((s_[pos_] == '-' || s_[pos_] == '+') && (s_[pos_ - 1] == 'e' || s_[pos_ - 1] == 'E')))) {
      if (!std::isdigit(static_cast<unsigned char>(s_[pos_]))) is_float = true;
      ++pos_;
    }
    const std::string tok = s_.substr(start, pos_ - start);
    if (tok.empty() || tok == "-" || tok == "+") fail("a default value");
    try {
      size_t used = 0;
      if (is_float || t.base == BaseType::Float) {
        if (t.base == BaseType::Int) fail("an integer default for an int argument");
        const double v = std::stod(tok, &used);
        if (used != tok.size()) fail("a number");
        return v;
      }
      const long long v = std::stoll(tok, &used);
      if (used != tok.size()) fail("a number");
      return static_cast<int64_t>(v);
    } catch (const std::logic_error&) {
      fail("a number in range");
    }
  }

  IValue default_value(const ArgType& t) {
    if (consume("None")) {
      if (!t.is_optional) fail("None only as the default of an optional (T?) argument");
      return IValue();
    }
    if (t.is_list) {
      expect("[");
      if (t.base == BaseType::Int) {
        IntList v;
        if (!consume("]")) {
          do v.push_back(number(t).get<int64_t>("list element"));
          while (consume(","));
          expect("]");
        }
        return v;
      }
      if (t.base == BaseType::Float) {
        std::vector<double> v;
        if (!consume("]")) {
          do v.push_back(number(t).get<double>("list element"));
          while (consume(","));
          expect("]");
        }
        return v;
      }
      fail("a default only for int[] or float[] lists");
    }
    switch (t.base) {
      case BaseType::Bool:
        if (consume("True")) return true;
        if (consume("False")) return false;
        fail("True or False");
      case BaseType::Int:
      case BaseType::Float:
      case BaseType::Scalar: return number(t);
      case BaseType::Str: {
        skip_space();
        if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail("a quoted string");
        const char quote = s_[pos_++];
        const size_t end = s_.find(quote, pos_);
        if (end == std::string::npos) fail("a closing quote");
        std::string v = s_.substr(pos_, end - pos_);
        pos_ = end + 1;
        return v;
      }
      default: fail("a default only for bool, int, float, Scalar or str arguments");
    }
  }

  const std::string& s_;
  size_t pos_ = 0;
};

const char* base_name(BaseType b) {
  switch (b) {
    case BaseType::Tensor: return "Tensor";
    case BaseType::Int: return "int";
    case BaseType::Float: return "float";
    case BaseType::Bool: return "bool";
    case BaseType::Str: return "str";
    case BaseType::Scalar: return "Scalar";
    case BaseType::ScalarType: return "ScalarType";
    case BaseType::Device: return "Device";
    case BaseType::Generator: return "Generator";
  }
  return "?";
}

void write_default(std::ostream& out, const IValue& v) {
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::monostate>)
          out << "None";
        else if constexpr (std::is_same_v<T, bool>)
          out << (x ? "True" : "False");
        else if constexpr (std::is_same_v<T, int64_t>)
          out << x;
        else if constexpr (std::is_same_v<T, double>) {
          std::ostringstream num;
          num.precision(17);
          num << x;
          std::string s = num.str();
          if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
          out << s;
        } else if constexpr (std::is_same_v<T, std::string>)
          out << "'" << x << "'";
        else if constexpr (std::is_same_v<T, IntList> || std::is_same_v<T, std::vector<double>>) {
          out << "[";
          for (size_t i = 0; i < x.size(); ++i) out << (i ? ", " : "") << x[i];
          out << "]";
        }
      },
      v.payload());
}

}  // namespace

std::string ArgType::str() const {
  return std::string(base_name(base)) + (elem_optional ? "?" : "") + (is_list ? "[]" : "") +
         (is_optional ? "?" : "");
}

Schema Schema::parse(const std::string& text) {
  return Parser(text).schema();
}

std::string Schema::str() const {
  std::ostringstream out;
  if (!ns.empty()) out << ns << "::";
  out << name << "(";
  bool kw = false;
  for (size_t i = 0; i < arguments.size(); ++i) {
    const Argument& a = arguments[i];
    if (i) out << ", ";
    if (a.kwarg_only && !kw) {
      out << "*, ";
      kw = true;
    }
    out << a.type.str() << " " << a.name;
    if (a.default_value) {
      out << "=";
      write_default(out, *a.default_value);
    }
  }
  out << ") -> ";
  if (returns.size() == 1) {
    out << returns[0].str();
  } else {
    out << "(";
    for (size_t i = 0; i < returns.size(); ++i) out << (i ? ", " : "") << returns[i].str();
    out << ")";
  }
  return out.str();
}

}  // namespace ember
