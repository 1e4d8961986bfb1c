// The server's own checks of a request's head (http/request_head.cpp): the raw scan that runs
// before Beast's parser and the framing rules applied to the parsed fields.
#include <gtest/gtest.h>

#include <string>

#include "http/request_head.hpp"

using leuria::http::check_head;
using leuria::http::Header;
using leuria::http::HeadScan;
using leuria::http::scan_head;
using R = HeadScan::Result;

namespace {

HeadScan scan(std::string_view bytes) {
  std::size_t pos = 0;
  return scan_head(bytes, pos);
}

}  // namespace

TEST(RequestHead, FindsTheEndOfACleanHead) {
  const std::string head = "GET /health HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n";
  auto s = scan(head + "POST / HTTP/1.1\r\n");  // a pipelined request after it is not looked at
  EXPECT_EQ(s.result, R::complete);
  EXPECT_EQ(s.end, head.size());
  EXPECT_EQ(scan("GET / HTTP/1.1\r\n\r\n").end, 18u);
}

TEST(RequestHead, WaitsForMoreAtEveryCut) {
  const std::string head = "GET / HTTP/1.1\r\nHost: a\r\nX-A:  b\t\r\n\r\n";
  for (std::size_t cut = 0; cut < head.size(); ++cut)
    EXPECT_EQ(scan(head.substr(0, cut)).result, R::need_more) << cut;
  // Fed in pieces, each byte is looked at once and the answer is the same.
  std::size_t pos = 0;
  HeadScan s;
  for (std::size_t n = 1; n <= head.size(); ++n) s = scan_head(std::string_view(head).substr(0, n), pos);
  EXPECT_EQ(s.result, R::complete);
  EXPECT_EQ(s.end, head.size());
}

TEST(RequestHead, RefusesBareLineEndsAndFolds) {
  for (const char* bad : {"GET / HTTP/1.1\n\n", "GET / HTTP/1.1\r\nHost: a\n\r\n", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n",
                          "GET / HTTP/1.1\r\nHost: a\rX: b\r\n\r\n", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n",
                          "GET / HTTP/1.1\r\nX: a\r\n\tb\r\n\r\n", "GET / HTTP/1.1\r\n Host: a\r\n\r\n",
                          "GET / HTTP/1.1\r\n\r\r", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"})
    EXPECT_EQ(scan(bad).result, R::malformed) << bad;
}

TEST(RequestHead, CountsFields) {
  std::vector<Header> h(100, Header{"X-A", "b"});
  EXPECT_EQ(check_head(11, h, 100).status, 0u);
  h.push_back({"X-A", "b"});
  EXPECT_EQ(check_head(11, h, 100).status, 431u);
}

TEST(RequestHead, AcceptsPlainFraming) {
  EXPECT_EQ(check_head(11, {{"Content-Length", "0"}}, 100).status, 0u);
  EXPECT_EQ(check_head(11, {{"content-length", "9223372036854775807"}}, 100).status, 0u);
  EXPECT_EQ(check_head(11, {{"Transfer-Encoding", "chunked"}}, 100).status, 0u);
  EXPECT_EQ(check_head(11, {{"transfer-encoding", "CHUNKED"}}, 100).status, 0u);
  EXPECT_EQ(check_head(10, {{"Content-Length", "12"}}, 100).status, 0u);
  EXPECT_EQ(check_head(11, {}, 100).status, 0u);
}

TEST(RequestHead, RefusesFramingTwoReadersCouldDisagreeOn) {
  const std::vector<std::vector<Header>> bad = {
      {{"Content-Length", "5"}, {"Transfer-Encoding", "chunked"}},
      {{"Transfer-Encoding", "chunked, identity"}, {"Content-Length", "5"}},
      {{"Content-Length", "5"}, {"Content-Length", "5"}},
      {{"Content-Length", "5"}, {"content-length", "6"}},
      {{"Content-Length", "5, 5"}},
      {{"Content-Length", "+5"}},
      {{"Content-Length", "-5"}},
      {{"Content-Length", "5 5"}},
      {{"Content-Length", "0x10"}},
      {{"Content-Length", ""}},
      {{"Content-Length", "9223372036854775808"}},
      {{"Content-Length", "18446744073709551616"}},
      {{"Transfer-Encoding", "chunked, identity"}},
      {{"Transfer-Encoding", "xchunked"}},
      {{"Transfer-Encoding", "identity"}},
      {{"Transfer-Encoding", "gzip, chunked"}},
      {{"Transfer-Encoding", "chunked"}, {"Transfer-Encoding", "chunked"}},
  };
  for (auto& h : bad) EXPECT_EQ(check_head(11, h, 100).status, 400u) << h.front().value;
  EXPECT_EQ(check_head(10, {{"Transfer-Encoding", "chunked"}}, 100).status, 400u);
}
