#include <gtest/gtest.h>

#include <set>

#include "core/random.hpp"

using namespace leuria::core;

TEST(Random, Base64UrlWithoutPadding) {
  EXPECT_EQ(base64url(""), "");
  EXPECT_EQ(base64url("f"), "Zg");
  EXPECT_EQ(base64url("fo"), "Zm8");
  EXPECT_EQ(base64url("foo"), "Zm9v");
  EXPECT_EQ(base64url("\xfb\xff"), "-_8");
}

TEST(Random, IdsAndTokensHaveTheOriginalsLengths) {
  EXPECT_EQ(random_base64url(kRequestIdBytes).size(), 24u);
  EXPECT_EQ(random_base64url(kTokenBytes).size(), 43u);
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(random_base64url(kTokenBytes));
  EXPECT_EQ(seen.size(), 1000u);
}

TEST(Random, SeveralValuesFromOneDraw) {
  auto v = random_base64url({16, kTokenBytes, 6, 0});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0].size(), 22u);
  EXPECT_EQ(v[1].size(), 43u);
  EXPECT_EQ(v[2].size(), 8u);
  EXPECT_EQ(v[3], "");
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i)
    for (auto& s : random_base64url({kTokenBytes, kTokenBytes})) seen.insert(s);
  EXPECT_EQ(seen.size(), 1000u);  // no value repeats, within a draw or across draws
}

TEST(Random, Sha256Hex) {
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

// The kept context gives every text its own hash, whatever was hashed before it.
TEST(Random, Sha256KeepsNoStateBetweenTexts) {
  Sha256 h;
  EXPECT_EQ(h.hex("abc"), sha256_hex("abc"));
  EXPECT_EQ(h.hex(""), sha256_hex(""));
  const std::string long_text(1000, 'x');
  EXPECT_EQ(h.hex(long_text), sha256_hex(long_text));
  EXPECT_EQ(h.hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(Random, ConstantTimeEqual) {
  EXPECT_TRUE(constant_time_equal("abc", "abc"));
  EXPECT_FALSE(constant_time_equal("abc", "abd"));
  EXPECT_FALSE(constant_time_equal("abc", "abcd"));
  EXPECT_TRUE(constant_time_equal("", ""));
}

TEST(Random, NonceSyntax) {
  EXPECT_TRUE(valid_nonce(std::string(22, 'a')));
  EXPECT_TRUE(valid_nonce(std::string(128, '_')));
  EXPECT_TRUE(valid_nonce("AZaz09-_AZaz09-_AZaz09"));
  EXPECT_FALSE(valid_nonce(std::string(21, 'a')));
  EXPECT_FALSE(valid_nonce(std::string(129, 'a')));
  EXPECT_FALSE(valid_nonce(std::string(21, 'a') + "="));
  EXPECT_FALSE(valid_nonce(std::string(21, 'a') + "+"));
  EXPECT_FALSE(valid_nonce(std::string(21, 'a') + "/"));
  EXPECT_FALSE(valid_nonce(""));
}
