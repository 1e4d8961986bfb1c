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

TEST(Caller, ABrowserWithoutOriginFromAnotherSiteIsAWebPage) {
  // <img>, <script>, navigations and form GETs carry no Origin; Sec-Fetch-Site still names the site.
  for (const char* site : {"cross-site", "same-site", "something-new", ""}) {
    auto c = classify_caller(std::nullopt, 5000, site);
    EXPECT_EQ(c.kind, CallerKind::web) << site;
    EXPECT_TRUE(c.origin.empty()) << site;
    EXPECT_TRUE(c.raw_origin.empty()) << site;
  }
  // The visitor typing or opening a URL, and the engine's own page loading its assets.
  EXPECT_EQ(classify_caller(std::nullopt, 5000, "none").kind, CallerKind::local);
  EXPECT_EQ(classify_caller(std::nullopt, 5000, "same-origin").kind, CallerKind::local);
  // With an Origin, the Origin decides.
  EXPECT_EQ(classify_caller("http://127.0.0.1:5000", 5000, "same-origin").kind, CallerKind::own_page);
  EXPECT_EQ(classify_caller("https://shop.example", 5000, "cross-site").origin, "https://shop.example");
}
