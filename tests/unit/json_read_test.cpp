// The engine's one JSON policy (src/json/read.hpp): depth, repeated keys, UTF-8, trailing bytes.
#include "json/read.hpp"

#include <gtest/gtest.h>

#include <boost/json/serialize.hpp>
#include <random>

#include "json/scan.hpp"
#include "json/write.hpp"
#include "mutate.hpp"

namespace {
using leuria::jsonio::read;
using leuria::jsonio::read_object;
using leuria::jsonio::valid;

std::string nested(std::size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

TEST(JsonRead, ReadsWhatBoostReads) {
  auto v = read(R"({"a":[1,-2,3.5,true,null,"x\u00e9"],"b":{"c":18446744073709551615}})");
  ASSERT_TRUE(v);
  EXPECT_EQ(boost::json::serialize(*v), R"({"a":[1,-2,3.5E0,true,null,"xé"],"b":{"c":18446744073709551615}})");
  EXPECT_TRUE(read("  \"s\"\n"));
}

TEST(JsonRead, DepthLimitIsSixtyFour) {
  EXPECT_TRUE(read(nested(64)));
  auto deep = read(nested(65));
  ASSERT_FALSE(deep);
  EXPECT_EQ(deep.error().message, "it nests deeper than 64 levels");
  // A deep text that is also cut short still says it is too deep, without walking it all.
  EXPECT_FALSE(read(std::string(100000, '[')));
}

TEST(JsonRead, RepeatedKeysAreRefusedAndNamed) {
  auto dup = read(R"({"token":"a","x":1,"token":"b"})");
  ASSERT_FALSE(dup);
  EXPECT_EQ(dup.error().message, "the key \"token\" appears twice in one object");
  // Deep inside, and keys written with escapes that decode to the same text.
  auto inner = read(R"([{"a":{"k":1,"\u006b":2}}])");
  ASSERT_FALSE(inner);
  EXPECT_EQ(inner.error().message, "the key \"k\" appears twice in one object");
  // The same key in two different objects is fine.
  EXPECT_TRUE(read(R"({"a":{"k":1},"b":{"k":2},"k":3})"));
}

TEST(JsonRead, InvalidUtf8IsRefused) {
  for (std::string bad : {std::string("\"\xff\""), std::string("\"\xc0\xaf\""), std::string("\"\xed\xa0\x80\""),
                          std::string("{\"\xe2\x82\":1}")}) {
    auto v = read(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_EQ(v.error().message, "it is not valid UTF-8");
  }
}

TEST(JsonRead, SyntaxErrorsAndTrailingBytes) {
  for (const char* bad : {"{", "{\"a\":1,}", "[1,]", "// c\n1", "1 2", "{} x", "nul", "\"a", "01"}) {
    auto v = read(bad);
    ASSERT_FALSE(v) << bad;
    EXPECT_NE(v.error().message.find("not valid JSON"), std::string::npos) << bad << ": " << v.error().message;
  }
  EXPECT_EQ(read("  ").error().message, "it is empty");
}

TEST(JsonRead, NumbersTooLargeForJsonAreRefused) {
  // Boost would read 1e400 as infinity and write it back as `Infinity`, which is not JSON.
  for (const char* big : {"1e400", "[-1e400]", R"({"a":123456789e999})"}) {
    auto v = read(big);
    ASSERT_FALSE(v) << big;
    EXPECT_EQ(v.error().message, "it has a number too large for JSON");
  }
  EXPECT_TRUE(read("1e308"));
  EXPECT_TRUE(read("18446744073709551616"));  // past uint64: a double, finite
}

TEST(JsonRead, ReadObjectInsistsOnAnObject) {
  EXPECT_TRUE(read_object("{}"));
  EXPECT_EQ(read_object("[]").error().message, "it is not a JSON object");
}

TEST(JsonValid, TakesWhatReadTakes) {
  // The sample texts of the tests above, then thousands of mutations of them: valid() and read() agree.
  const std::vector<std::string> seeds = {
      R"({"a":[1,-2,3.5,true,null,"x\u00e9"],"b":{"c":18446744073709551615}})", R"({"a":1,"a":2})",
      R"({"a":{"b":1,"b":2}})", nested(64), nested(65), "1e400", "\"a\xff\"", "{\"a\":1,}", " [1, 2] ", "",
      R"({"q":"blue mug","n":[{"k":"v"}]})"};
  for (const auto& s : seeds) EXPECT_EQ(valid(s), read(s).has_value()) << s;
  std::mt19937 rng(20261130);
  const std::string alphabet = "{}[]:,\"\\ 0123456789.eE+-tfnulx\xc3\xa9\xff";
  const std::vector<std::string> words = {"true", "null", "\"a\"", "[[[", "]]]", "1e999", "\\u00", ",\"a\":1"};
  for (int n = 0; n < 20000; ++n) {
    const std::string s = leuria::mutation::mutate(seeds[rng() % seeds.size()], rng, alphabet, words);
    ASSERT_EQ(valid(s), read(s).has_value()) << "mutation " << n << ": " << s;
  }
}

TEST(JsonMemberText, GivesAMembersValueAsWritten) {
  using leuria::jsonio::member_text;
  const std::string t = R"( { "a" : "x\"}" , "b":[1, {"c":"]"}] ,"n": -1.5e3 , "z":{} } )";
  EXPECT_EQ(member_text(t, "a"), R"("x\"}")");
  EXPECT_EQ(member_text(t, "b"), R"([1, {"c":"]"}])");
  EXPECT_EQ(member_text(t, "n"), "-1.5e3");
  EXPECT_EQ(member_text(t, "z"), "{}");
  EXPECT_EQ(member_text(t, "c"), std::nullopt);  // only the object's own members
  EXPECT_EQ(member_text("{}", "a"), std::nullopt);
  EXPECT_EQ(member_text("[1]", "a"), std::nullopt);
  EXPECT_EQ(member_text(R"({"\u0061":1,"b":2})", "b"), std::nullopt);  // a key with escapes: read it whole
}

TEST(JsonWrite, AppendStringEscapesAsBoostDoes) {
  for (const std::string& text : {std::string("plain"), std::string("quote \" and \\ backslash"),
                                 std::string("ctl \x01\n\t\x1f"), std::string("é ✓"), std::string("del \x7f, slash /"), std::string(5000, 'x')}) {
    std::string out = "pre:";
    leuria::jsonio::append_string(out, text);
    EXPECT_EQ(out, "pre:" + boost::json::serialize(boost::json::string_view(text)));
  }
}

}  // namespace
