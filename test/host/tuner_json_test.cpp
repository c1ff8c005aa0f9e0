// The cache's JSON reader and writer.
#include <doctest/doctest.h>

#include "ktune/tuner/json.hpp"

using ktune::tuner::json::ObjectWriter;
using ktune::tuner::json::parse;
using ktune::tuner::json::Value;

TEST_CASE("tuner json: parses objects, arrays, escapes and numbers exactly") {
  Value v;
  std::string why;
  REQUIRE(parse(R"( {"a": 1, "b": "x\"y\\z\n\u00e9\ud83d\ude00", "c": [true, false, null, -0.5e3], "d": {"e": {}}} )", v, why));
  CHECK(v.is_object());
  std::int64_t a = 0;
  CHECK(v.get_int("a", a));
  CHECK(a == 1);
  std::string b;
  CHECK(v.get_string("b", b));
  CHECK(b == "x\"y\\z\n\xC3\xA9\xF0\x9F\x98\x80");
  const Value* c = v.get("c");
  REQUIRE(c != nullptr);
  REQUIRE(c->items.size() == 4);
  CHECK(c->items[0].b);
  CHECK(c->items[3].text == "-0.5e3");
  double d = 0;
  CHECK_FALSE(v.get_double("b", d));  // wrong type
  CHECK_FALSE(v.get_int("c", a));
  CHECK_FALSE(v.get_int("missing", a));
  // 9007199254740993 is not representable as a double; integers are read from the text exactly.
  REQUIRE(parse(R"({"big": 9007199254740993, "f": 4096.0})", v, why));
  CHECK(v.get_int("big", a));
  CHECK(a == 9007199254740993LL);
  CHECK_FALSE(v.get_int("f", a));  // "4096.0" is not an integer
  CHECK(v.get_double("f", d));
  CHECK(d == 4096.0);
}

TEST_CASE("tuner json: rejects malformed text without throwing") {
  const char* bad[] = {
      "",                                   // empty
      "{",                                  // truncated
      R"({"a":1)",                          // truncated
      R"({"a":)",                           // truncated
      R"({"a":"xy)",                        // unterminated string
      R"({"a":1,})",                        // trailing comma
      R"({a:1})",                           // unquoted name
      R"({'a':1})",                         // single quotes
      R"({"a":01})",                        // leading zero
      R"({"a":1.})",                        // bad fraction
      R"({"a":-})",                         // bad number
      R"({"a":1e})",                        // bad exponent
      R"({"a":NaN})",                       // not JSON
      R"({"a":Infinity})",                  // not JSON
      R"({"a":1} x)",                       // trailing garbage
      R"({"a":1}{"b":2})",                  // two documents
      R"({"a":1,"a":2})",                   // duplicate name
      R"({"a":"\x"})",                      // bad escape
      R"({"a":"\u12"})",                    // short \u
      R"({"a":"\ud800"})",                  // unpaired surrogate
      R"({"a":"\u0000"})",                  // NUL
      "{\"a\":\"tab\there\"}",              // raw control character
      "{\"a\":\"\xff\"}",                   // invalid UTF-8
      "{\"a\":\"\xc3\"}",                   // truncated UTF-8
      "{\"a\":\"\xe0\x80\x80\"}",           // overlong UTF-8
      "{\"a\":\"\xed\xa0\x80\"}",           // UTF-8 surrogate
      R"({"a":tru})",                       // bad literal
      R"([[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]]])",  // too deep
  };
  for (const char* b : bad) {
    Value v;
    std::string why;
    CHECK_MESSAGE(!parse(b, v, why), b);
    CHECK(!why.empty());
  }
  // Interior NUL byte.
  Value v;
  std::string why;
  CHECK_FALSE(parse(std::string_view("{\"a\":1}\0", 8), v, why));
}

TEST_CASE("tuner json: the writer's output reads back") {
  const std::string tricky = std::string("q\"b\\s/\n\r\t\x01 \xC3\xA9");
  const std::string line = ObjectWriter().str("s", tricky).integer("i", -42).number("x", 0.1 + 0.2).number("y", 1e-300).finish();
  CHECK(line.find('\n') == std::string::npos);
  Value v;
  std::string why;
  REQUIRE_MESSAGE(parse(line, v, why), why);
  std::string s;
  std::int64_t i = 0;
  double x = 0, y = 0;
  CHECK(v.get_string("s", s));
  CHECK(s == tricky);
  CHECK(v.get_int("i", i));
  CHECK(i == -42);
  CHECK(v.get_double("x", x));
  CHECK(x == 0.1 + 0.2);  // shortest round-trip text
  CHECK(v.get_double("y", y));
  CHECK(y == 1e-300);
}
