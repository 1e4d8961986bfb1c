#include <gtest/gtest.h>

#include "core/origin.hpp"

using leuria::core::normalize_web_origin;
using leuria::core::parse_origin;

TEST(Origin, NormalizesCaseAndDefaultPorts) {
  EXPECT_EQ(normalize_web_origin("HTTPS://Example.COM:443"), "https://example.com");
  EXPECT_EQ(normalize_web_origin("http://example.com:80"), "http://example.com");
  EXPECT_EQ(normalize_web_origin("http://example.com:443"), "http://example.com:443");
  EXPECT_EQ(normalize_web_origin("https://example.com:80"), "https://example.com:80");
  EXPECT_EQ(normalize_web_origin("http://localhost:3000"), "http://localhost:3000");
  EXPECT_EQ(normalize_web_origin("http://[::1]:8080"), "http://[::1]:8080");
  EXPECT_EQ(normalize_web_origin("https://xn--bcher-kva.example"), "https://xn--bcher-kva.example");
}

TEST(Origin, RefusesWhatIsNotAnHttpOrigin) {
  for (const char* bad : {"null", "", "file://", "chrome-extension://abcdef", "tauri://localhost", "example.com",
                          "http://", "http://:80", "http://a.example:", "http://a.example:0", "http://a.example:65536",
                          "http://a.example:12x", "http://a.example/path", "http://a b.example", "http://a.example?x",
                          "http://user@a.example", "http://[::1", "javascript://x", "http://a.example:+80"}) {
    EXPECT_FALSE(normalize_web_origin(bad)) << bad;
  }
}

TEST(Origin, ParsesOtherSchemesButMarksThemNotWeb) {
  auto o = parse_origin("tauri://localhost");
  ASSERT_TRUE(o);
  EXPECT_FALSE(o->is_web());
  EXPECT_EQ(o->serialized(), "tauri://localhost");
  EXPECT_FALSE(parse_origin("null"));
}

TEST(Origin, ToleratesOneTrailingSlashFromPeople) {
  EXPECT_EQ(normalize_web_origin("https://example.com/"), "https://example.com");
  EXPECT_FALSE(normalize_web_origin("https://example.com//"));
}
