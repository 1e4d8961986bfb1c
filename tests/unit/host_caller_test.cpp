#include <gtest/gtest.h>

#include "core/caller.hpp"
#include "core/host.hpp"

using namespace leuria::core;

TEST(Host, OnlyTheTwoExactNamesWithThePort) {
  EXPECT_TRUE(host_allowed("127.0.0.1:19570", 19570));
  EXPECT_TRUE(host_allowed("localhost:19570", 19570));
  EXPECT_TRUE(host_allowed("LOCALHOST:19570", 19570));
  for (const char* bad : {"127.0.0.1", "localhost", "127.0.0.1:19571", "127.1:19570", "0x7f.1:19570",
                          "2130706433:19570", "[::1]:19570", "[::ffff:127.0.0.1]:19570", "localhost.:19570",
                          "127.0.0.1.:19570", "localhost.evil.com:19570", "x.localhost:19570", "evil.com:19570",
                          "", ":19570", "127.0.0.1:019570", "127.0.0.1:19570 ", " 127.0.0.1:19570",
                          "127.0.0.1:19570:19570"}) {
    EXPECT_FALSE(host_allowed(bad, 19570)) << bad;
  }
}

TEST(Caller, ToldApartByOrigin) {
  EXPECT_EQ(classify_caller(std::nullopt, 5000).kind, CallerKind::local);
  EXPECT_EQ(classify_caller("http://127.0.0.1:5000", 5000).kind, CallerKind::own_page);
  EXPECT_EQ(classify_caller("http://LOCALHOST:5000", 5000).kind, CallerKind::own_page);
  EXPECT_EQ(classify_caller("http://127.0.0.1:5001", 5000).kind, CallerKind::web);
  EXPECT_EQ(classify_caller("https://127.0.0.1:5000", 5000).kind, CallerKind::web);
  EXPECT_EQ(classify_caller("https://shop.example", 5000).kind, CallerKind::web);
  EXPECT_EQ(classify_caller("tauri://localhost", 5000).kind, CallerKind::desktop);
  EXPECT_EQ(classify_caller("https://tauri.localhost", 5000).kind, CallerKind::desktop);
  EXPECT_EQ(classify_caller("null", 5000).kind, CallerKind::bad_origin);
  EXPECT_EQ(classify_caller("file://", 5000).kind, CallerKind::bad_origin);
  EXPECT_EQ(classify_caller("chrome-extension://abc", 5000).kind, CallerKind::bad_origin);
}

TEST(Caller, KeepsTheOriginAsSentForCors) {
  auto c = classify_caller("HTTPS://Shop.Example:443", 5000);
  EXPECT_EQ(c.origin, "https://shop.example");
  EXPECT_EQ(c.raw_origin, "HTTPS://Shop.Example:443");
}
