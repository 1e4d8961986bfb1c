// jsonio::StringSlot: a text read through the slot must read as jsonio::scan reads it. Whenever
// match() takes a text, scan() takes it too, with the same string at the slot; and match() takes
// every text scan() takes that differs from the remembered one only by a string without \u
// escapes in the slot. Checked on random strings, on every two-byte string, on the edges of the
// three- and four-byte UTF-8 forms, and on mutations of the text around the slot.
#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "mutate.hpp"

#include "json/scan.hpp"
#include "json/string_slot.hpp"

using namespace leuria;

namespace {

// scan()'s reading of the string at b[0].c, the slot of the texts below, and where scan saw it begin.
struct AtTheSlot : jsonio::KeepNothing {
  std::optional<std::string> value;
  const char* at = nullptr;
  const char* pending = nullptr;
  bool wants_string(const jsonio::Path& p) {
    return p.depth() == 3 && p.at(0, "b") && p.at(1, std::size_t{0}) && p.at(2, "c");
  }
  void kept_at(const char* a) { pending = a; }
  void string(const jsonio::Path&, std::string v) {
    value = std::move(v);
    at = pending;
  }
};

std::optional<std::string> scanned(std::string_view text, const char** at = nullptr) {
  AtTheSlot v;
  if (!jsonio::scan(text, v)) return std::nullopt;
  if (at) *at = v.at;
  return v.value;
}

const std::string kBefore = R"({"a":1.5,"b":[{"z":null,"c":")";
const std::string kAfter = R"("}],"d":[true,{"e":"\u00e9","c":"x"}]}  )";

jsonio::StringSlot learned() {
  const std::string text = kBefore + "first" + kAfter;
  const char* at = nullptr;
  EXPECT_EQ(scanned(text, &at), "first");
  jsonio::StringSlot slot;
  EXPECT_TRUE(slot.learn(text, at, "first"));
  return slot;
}

// match() against scan() on one body in the slot. `must_take`: scan() takes it, so match() must.
void agree(const jsonio::StringSlot& slot, const std::string& body, bool must_take) {
  const std::string text = kBefore + body + kAfter;
  std::string value = "stale";
  const bool taken = slot.match(text, value);
  const auto scan = scanned(text);
  if (taken) {
    ASSERT_TRUE(scan) << "match() took a text scan() refuses: " << testing::PrintToString(body);
    ASSERT_EQ(value, *scan) << testing::PrintToString(body);
  } else if (must_take && scan) {
    FAIL() << "match() left a plain string to scan(): " << testing::PrintToString(body);
  }
}

bool plain(std::string_view body) {  // no quote and no \u: one string that match() must take when scan() does
  return body.find('"') == std::string_view::npos && body.find("\\u") == std::string_view::npos;
}

}  // namespace

TEST(StringSlot, LearnsAStringOnlyWhereTheTextHoldsIt) {
  jsonio::StringSlot slot;
  EXPECT_FALSE(slot.ready());
  const std::string text = kBefore + "first" + kAfter;
  const char* at = nullptr;
  ASSERT_EQ(scanned(text, &at), "first");
  const std::string copy = "first";
  EXPECT_FALSE(slot.learn(text, copy.data(), "first"));  // the same bytes elsewhere: not in the text
  EXPECT_FALSE(slot.learn(text, at, "firs"));             // not the string written there
  EXPECT_FALSE(slot.learn(text, at + 1, "irst"));         // not where a string begins
  EXPECT_FALSE(slot.ready());
  ASSERT_TRUE(slot.learn(text, at, "first"));

  // A string that begins with an escape reaches the visitor from the parser's copy: not learned,
  // and what was learned before stays. One with escapes after its first character is learned; one
  // with a \u escape is not (match() would not take it).
  const std::string leading = kBefore + R"(\nfirst)" + kAfter;
  ASSERT_EQ(scanned(leading, &at), "\nfirst");
  EXPECT_FALSE(slot.learn(leading, at, "\nfirst"));
  const std::string unicode = kBefore + R"(fi\u0072st)" + kAfter;
  ASSERT_EQ(scanned(unicode, &at), "first");
  EXPECT_FALSE(slot.learn(unicode, at, "first"));
  std::string v;
  EXPECT_TRUE(slot.match(kBefore + "again" + kAfter, v));
  EXPECT_EQ(v, "again");
  const std::string inner = kBefore + R"(fi\n\"rst\\)" + kAfter;
  ASSERT_EQ(scanned(inner, &at), "fi\n\"rst\\");
  jsonio::StringSlot from_escaped;
  ASSERT_TRUE(from_escaped.learn(inner, at, "fi\n\"rst\\"));
  EXPECT_TRUE(from_escaped.match(kBefore + "again" + kAfter, v));
  EXPECT_EQ(v, "again");

  EXPECT_TRUE(slot.match(leading, v));  // read through the slot, escapes and all
  EXPECT_EQ(v, "\nfirst");
  EXPECT_TRUE(slot.match(kBefore + kAfter, v));
  EXPECT_EQ(v, "");
  EXPECT_FALSE(slot.match(kBefore + "x" + kAfter + " ", v));      // one byte more after
  EXPECT_FALSE(slot.match(kBefore.substr(1) + "x" + kAfter, v));  // one byte less before
  EXPECT_FALSE(slot.match(unicode, v));                            // \u: scan() reads it
  EXPECT_FALSE(slot.match(kBefore + R"(x","c2":"y)" + kAfter, v));  // valid JSON, but not one string there
  slot.forget();
  EXPECT_FALSE(slot.match(kBefore + "again" + kAfter, v));
}

TEST(StringSlot, TakesWhatScanTakesAtTheSlotOnFortyThousandRandomStrings) {
  const auto slot = learned();
  std::mt19937 rng(20261203);  // fixed: a failure is reproducible
  int taken = 0;
  for (int n = 0; n < 40000; ++n) {
    const std::string body = mutation::string_body(rng, n % 2 == 0);
    agree(slot, body, plain(body));
    std::string v;
    taken += slot.match(kBefore + body + kAfter, v);
  }
  EXPECT_GT(taken, 15000);  // the valid half, but for its \u escapes
}

TEST(StringSlot, ChecksUtf8AndControlCharactersAsScanDoes) {
  const auto slot = learned();
  for (int a = 0; a < 256; ++a) {
    const std::string one(1, static_cast<char>(a));
    agree(slot, one, plain(one));
    for (int b = 0; b < 256; ++b) {
      const std::string two{static_cast<char>(a), static_cast<char>(b)};
      agree(slot, two, plain(two));
    }
  }
  // Three- and four-byte forms: every lead and second byte, the edges of the bytes after.
  const int edges[] = {0x00, 0x41, 0x7f, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xff};
  for (int lead = 0xe0; lead <= 0xff; ++lead)
    for (int second = 0; second < 256; ++second)
      for (int third : edges) {
        const std::string three{static_cast<char>(lead), static_cast<char>(second), static_cast<char>(third)};
        agree(slot, three, plain(three));
        if (lead < 0xf0) continue;
        for (int fourth : edges) {
          const std::string four = three + static_cast<char>(fourth);
          agree(slot, four, plain(four));
        }
      }
}

TEST(StringSlot, NeverTakesATextScanReadsOtherwiseOnTwentyThousandMutationsAround) {
  const auto slot = learned();
  std::mt19937 rng(20261204);
  const std::string alphabet = "{}[]\":,0123456789.-eE\\u tnrfalsenul\xc3\xa9\xff";
  const std::vector<std::string> words = {"\"b\"", "\"c\"", "\"z\"", "[", "{", "}", "]", "null", "1e400", "\"x\"", " "};
  for (int n = 0; n < 20000; ++n) {
    const std::string text = mutation::mutate(kBefore + mutation::string_body(rng, true) + kAfter, rng, alphabet, words);
    std::string value;
    if (!slot.match(text, value)) continue;
    const auto scan = scanned(text);
    ASSERT_TRUE(scan) << "mutation " << n << ": " << testing::PrintToString(text);
    ASSERT_EQ(value, *scan) << "mutation " << n << ": " << testing::PrintToString(text);
  }
}
