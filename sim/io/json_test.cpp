// The strict JSON reader: limits, duplicate keys, exact types, errors that name file and key.
#include "sim/io/json.h"

#include <gtest/gtest.h>

#include <string>

#include "sim/core/error.h"

namespace kvfleet::sim {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_json(text, "f.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "";
}

TEST(Json, DeepNestingIsRefusedWhileParsingNotByTheStack) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  EXPECT_NE(error_of(deep).find("nested more than 64 levels"), std::string::npos);
  const std::string deep_obj =
      "{\"a\":" + std::string(100000, '[') + "1" + std::string(100000, ']') + "}";
  EXPECT_NE(error_of(deep_obj).find("f.json: a"), std::string::npos) << error_of(deep_obj);
  // 64 levels are fine.
  EXPECT_EQ(error_of(std::string(63, '[') + std::string(63, ']')), "");
}

TEST(Json, ADuplicateKeyIsRefusedAndNamed) {
  EXPECT_NE(error_of(R"({"kv": {"a": 1, "a": 2}})").find("kv.a: given twice"), std::string::npos)
      << error_of(R"({"kv": {"a": 1, "a": 2}})");
  EXPECT_NE(error_of(R"([{"x": 1}, {"x": 1, "y": 2, "y": 3}])").find("[1].y: given twice"),
            std::string::npos);
  EXPECT_EQ(error_of(R"({"a": {"x": 1}, "b": {"x": 1}})"), "");  // same key, other objects
}

TEST(Json, SyntaxErrorsNameTheFileAndByte) {
  const std::string e = error_of("{\"a\": }");
  EXPECT_NE(e.find("f.json: not valid JSON: "), std::string::npos) << e;
  EXPECT_NE(e.find("(byte 7)"), std::string::npos) << e;
  EXPECT_EQ(e.find("[json.exception"), std::string::npos) << e;  // no library tags
  EXPECT_NE(error_of("").find("not valid JSON"), std::string::npos);
}

TEST(Json, TypedMembersRefuseOtherTypes) {
  const auto j = parse_json(
      R"({"n": 2048, "f": 2048.0, "s": "2588", "b": 1, "t": true, "x": 1.5, "neg": -3,
          "o": {"k": "v"}, "nul": null})",
      "m.json");
  JsonObject o(j, "m.json");
  EXPECT_EQ(*o.integer("n"), 2048);
  EXPECT_EQ(*o.integer("f"), 2048);
  EXPECT_FALSE(o.integer("missing").has_value());
  EXPECT_FALSE(o.integer("nul").has_value());  // null counts as absent
  auto what = [](auto f) {
    try {
      f();
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_EQ(what([&] { o.integer("s"); }), "m.json: s: must be an integer, not a string");
  EXPECT_EQ(what([&] { o.boolean("b"); }), "m.json: b: must be true or false, not a number");
  EXPECT_EQ(what([&] { o.integer("x"); }), "m.json: x: must be an integer, not the number 1.5");
  EXPECT_NE(what([&] { o.integer("neg", 0); }).find("must be between 0"), std::string::npos);
  EXPECT_EQ(what([&] { o.need_string("missing"); }), "m.json: missing: missing (required)");
  EXPECT_TRUE(*o.boolean("t"));
  const auto inner = o.object("o");
  ASSERT_TRUE(inner.has_value());
  EXPECT_EQ(what([&] { inner->integer("k"); }), "m.json: o.k: must be an integer, not a string");
  EXPECT_EQ(what([&] { o.object("n"); }), "m.json: n: must be an object, not a number");
}

TEST(Json, HugeNumbersAreRefusedNotWrapped) {
  const auto j = parse_json(R"({"big": 1e300, "huge": 99999999999999999999})", "m.json");
  JsonObject o(j, "m.json");
  EXPECT_THROW(o.number("big", 0, 1e12), InputError);
  EXPECT_THROW(o.integer("huge"), InputError);
}

}  // namespace
}  // namespace kvfleet::sim
