// ktune/tuner/json.hpp — just enough JSON for the tuning cache (one object per line), with no
// external dependency. The parser is strict (RFC 8259 grammar, valid UTF-8, no duplicate keys, no
// trailing garbage) and bounded (nesting depth, input size), and it never throws on bad input: it
// returns false with a short reason. Numbers keep their source text so integers are read exactly.
#pragma once
#include <charconv>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune::tuner::json {

struct Value {
  enum class Kind : std::uint8_t { null, boolean, number, string, array, object };
  Kind kind = Kind::null;
  bool b = false;
  // Declared here, defaulted below the class: clang (14, with libstdc++ 12) otherwise needs the default
  // constructor while std::pair<std::string, Value> (a member's element type) is still being
  // instantiated, and rejects the header.
  Value() noexcept;
  std::string text;  // string value, or the number's source text
  std::vector<Value> items;                               // array
  std::vector<std::pair<std::string, Value>> members;     // object, in source order

  bool is_object() const { return kind == Kind::object; }
  const Value* get(std::string_view key) const {
    if (kind != Kind::object) return nullptr;
    for (const auto& [k, v] : members)
      if (k == key) return &v;
    return nullptr;
  }
  // Typed accessors: false when absent or of another type / range.
  bool get_string(std::string_view key, std::string& out) const {
    const Value* v = get(key);
    if (v == nullptr || v->kind != Kind::string) return false;
    out = v->text;
    return true;
  }
  bool get_int(std::string_view key, std::int64_t& out) const {
    const Value* v = get(key);
    if (v == nullptr || v->kind != Kind::number) return false;
    const char* first = v->text.data();
    const char* last = first + v->text.size();
    auto [p, ec] = std::from_chars(first, last, out);
    return ec == std::errc() && p == last;  // "4096.0", "4e3" are not integers here
  }
  bool get_double(std::string_view key, double& out) const {
    const Value* v = get(key);
    if (v == nullptr || v->kind != Kind::number) return false;
    const char* first = v->text.data();
    const char* last = first + v->text.size();
    auto [p, ec] = std::from_chars(first, last, out);
    return ec == std::errc() && p == last && std::isfinite(out);
  }
};

inline Value::Value() noexcept = default;

namespace detail {

inline void append_utf8(std::string& s, std::uint32_t cp) {
  if (cp < 0x80) {
    s += static_cast<char>(cp);
  } else if (cp < 0x800) {
    s += static_cast<char>(0xC0 | (cp >> 6));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    s += static_cast<char>(0xE0 | (cp >> 12));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    s += static_cast<char>(0xF0 | (cp >> 18));
    s += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    s += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    s += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

class Parser {
 public:
  static constexpr int max_depth = 32;
  explicit Parser(std::string_view in) : s_(in) {}

  bool parse_document(Value& out, std::string& why) {
    skip_ws();
    if (!parse_value(out, 0)) {
      why = why_.empty() ? "malformed JSON" : why_;
      why += " at column " + std::to_string(pos_ + 1);
      return false;
    }
    skip_ws();
    if (pos_ != s_.size()) {
      why = "unexpected text after the JSON value at column " + std::to_string(pos_ + 1);
      return false;
    }
    return true;
  }

 private:
  std::string_view s_;
  std::size_t pos_ = 0;
  std::string why_;

  bool fail(const char* why) {
    if (why_.empty()) why_ = why;
    return false;
  }
  bool eof() const { return pos_ >= s_.size(); }
  char peek() const { return eof() ? '\0' : s_[pos_]; }
  void skip_ws() {
    while (!eof() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool literal(std::string_view w) {
    if (s_.substr(pos_, w.size()) != w) return fail("invalid literal");
    pos_ += w.size();
    return true;
  }

  bool parse_value(Value& v, int depth) {
    if (depth > max_depth) return fail("nesting too deep");
    if (eof()) return fail("unexpected end of line (truncated?)");
    switch (peek()) {
      case '{': return parse_object(v, depth);
      case '[': return parse_array(v, depth);
      case '"': v.kind = Value::Kind::string; return parse_string(v.text);
      case 't': v.kind = Value::Kind::boolean; v.b = true; return literal("true");
      case 'f': v.kind = Value::Kind::boolean; v.b = false; return literal("false");
      case 'n': v.kind = Value::Kind::null; return literal("null");
      default: return parse_number(v);
    }
  }

  bool parse_object(Value& v, int depth) {
    v.kind = Value::Kind::object;
    ++pos_;  // '{'
    skip_ws();
    if (peek() == '}') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_ws();
      if (peek() != '"') return fail(eof() ? "unexpected end of line (truncated?)" : "expected a member name");
      std::string key;
      if (!parse_string(key)) return false;
      for (const auto& m : v.members)
        if (m.first == key) return fail("duplicate member name");
      skip_ws();
      if (peek() != ':') return fail(eof() ? "unexpected end of line (truncated?)" : "expected ':'");
      ++pos_;
      skip_ws();
      Value child;
      if (!parse_value(child, depth + 1)) return false;
      v.members.emplace_back(std::move(key), std::move(child));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == '}') {
        ++pos_;
        return true;
      }
      return fail(eof() ? "unexpected end of line (truncated?)" : "expected ',' or '}'");
    }
  }

  bool parse_array(Value& v, int depth) {
    v.kind = Value::Kind::array;
    ++pos_;  // '['
    skip_ws();
    if (peek() == ']') {
      ++pos_;
      return true;
    }
    for (;;) {
      skip_ws();
      Value child;
      if (!parse_value(child, depth + 1)) return false;
      v.items.push_back(std::move(child));
      skip_ws();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() == ']') {
        ++pos_;
        return true;
      }
      return fail(eof() ? "unexpected end of line (truncated?)" : "expected ',' or ']'");
    }
  }

  bool hex4(std::uint32_t& out) {
    if (pos_ + 4 > s_.size()) return fail("truncated \\u escape");
    out = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      out <<= 4;
      if (c >= '0' && c <= '9') out |= static_cast<std::uint32_t>(c - '0');
      else if (c >= 'a' && c <= 'f') out |= static_cast<std::uint32_t>(c - 'a' + 10);
      else if (c >= 'A' && c <= 'F') out |= static_cast<std::uint32_t>(c - 'A' + 10);
      else return fail("bad \\u escape");
    }
    return true;
  }

  // One UTF-8 sequence starting at pos_ (first byte >= 0x80), copied to out; rejects overlongs,
  // surrogates and out-of-range code points.
  bool utf8(std::string& out) {
    const auto b0 = static_cast<unsigned char>(s_[pos_]);
    int n = 0;
    std::uint32_t cp = 0;
    if (b0 >= 0xC2 && b0 <= 0xDF) n = 1, cp = b0 & 0x1F;
    else if (b0 >= 0xE0 && b0 <= 0xEF) n = 2, cp = b0 & 0x0F;
    else if (b0 >= 0xF0 && b0 <= 0xF4) n = 3, cp = b0 & 0x07;
    else return fail("invalid UTF-8");
    if (pos_ + static_cast<std::size_t>(n) >= s_.size()) return fail("truncated UTF-8");
    for (int i = 1; i <= n; ++i) {
      const auto b = static_cast<unsigned char>(s_[pos_ + static_cast<std::size_t>(i)]);
      if ((b & 0xC0) != 0x80) return fail("invalid UTF-8");
      cp = (cp << 6) | (b & 0x3F);
    }
    if ((n == 2 && cp < 0x800) || (n == 3 && cp < 0x10000) || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
      return fail("invalid UTF-8");
    out.append(s_.substr(pos_, static_cast<std::size_t>(n) + 1));
    pos_ += static_cast<std::size_t>(n) + 1;
    return true;
  }

  bool parse_string(std::string& out) {
    ++pos_;  // opening quote
    out.clear();
    for (;;) {
      if (eof()) return fail("unterminated string (truncated?)");
      const char c = s_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) return fail("control character in string");
      if (static_cast<unsigned char>(c) >= 0x80) {
        if (!utf8(out)) return false;
        continue;
      }
      if (c != '\\') {
        out += c;
        ++pos_;
        continue;
      }
      ++pos_;
      if (eof()) return fail("unterminated escape (truncated?)");
      const char e = s_[pos_++];
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
          std::uint32_t cp = 0;
          if (!hex4(cp)) return false;
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            std::uint32_t lo = 0;
            if (s_.substr(pos_, 2) != "\\u") return fail("unpaired surrogate");
            pos_ += 2;
            if (!hex4(lo)) return false;
            if (lo < 0xDC00 || lo > 0xDFFF) return fail("unpaired surrogate");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("unpaired surrogate");
          }
          if (cp == 0) return fail("NUL in string");
          append_utf8(out, cp);
          break;
        }
        default: return fail("bad escape");
      }
    }
  }

  bool parse_number(Value& v) {
    const std::size_t start = pos_;
    if (peek() == '-') ++pos_;
    if (peek() == '0') {
      ++pos_;
    } else if (peek() >= '1' && peek() <= '9') {
      while (peek() >= '0' && peek() <= '9') ++pos_;
    } else {
      return fail(eof() ? "unexpected end of line (truncated?)" : "unexpected character");
    }
    if (peek() == '.') {
      ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return fail("bad number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (peek() == 'e' || peek() == 'E') {
      ++pos_;
      if (peek() == '+' || peek() == '-') ++pos_;
      if (!(peek() >= '0' && peek() <= '9')) return fail("bad number");
      while (peek() >= '0' && peek() <= '9') ++pos_;
    }
    if (pos_ - start > 64) return fail("number too long");
    v.kind = Value::Kind::number;
    v.text.assign(s_.substr(start, pos_ - start));
    return true;
  }
};

}  // namespace detail

// Parse one JSON document (here: one line of the cache). Never throws on malformed input.
inline bool parse(std::string_view text, Value& out, std::string& why) {
  out = Value{};
  return detail::Parser(text).parse_document(out, why);
}

// ---- Writing ----------------------------------------------------------------------------------------

inline void append_quoted(std::string& out, std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  out += '"';
  for (char c : s) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"') out += "\\\"";
    else if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (u < 0x20) {
      out += "\\u00";
      out += hex[u >> 4];
      out += hex[u & 15];
    } else {
      out += c;  // UTF-8 passes through
    }
  }
  out += '"';
}

// Builds one object on one line: {"a":1,"b":"x"} with members in call order.
class ObjectWriter {
 public:
  ObjectWriter& str(std::string_view key, std::string_view v) {
    sep(key);
    append_quoted(out_, v);
    return *this;
  }
  ObjectWriter& integer(std::string_view key, std::int64_t v) {
    sep(key);
    out_ += std::to_string(v);
    return *this;
  }
  // Shortest text that reads back to the same double (finite values only).
  ObjectWriter& number(std::string_view key, double v) {
    sep(key);
    if (!std::isfinite(v)) v = 0.0;
    char buf[64];
    auto [p, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, ec == std::errc() ? static_cast<std::size_t>(p - buf) : 0);
    return *this;
  }
  std::string finish() {
    out_ += '}';
    return std::move(out_);
  }

 private:
  std::string out_ = "{";
  void sep(std::string_view key) {
    if (out_.size() > 1) out_ += ',';
    append_quoted(out_, key);
    out_ += ':';
  }
};

}  // namespace ktune::tuner::json
