// http/request_parser.cpp: Beast's parser reading straight into http::Request, and the Connection
// and Upgrade rules read from the Request (the same answers Beast's own message gives).
#include <gtest/gtest.h>

#include <boost/beast/http/error.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <string>

#include "http/request_parser.hpp"

using leuria::http::Request;
using leuria::http::RequestParser;
namespace bhttp = boost::beast::http;

namespace {

// Feeds `bytes` to a parser `piece` bytes at a time (as a socket's reads would bring them) and
// returns the last error (need_more cleared).
boost::beast::error_code feed(RequestParser& p, std::string_view bytes, std::size_t piece = 1 << 20) {
  p.eager(true);
  std::string held;
  for (std::size_t at = 0; at < bytes.size(); at += piece) {
    held.append(bytes.substr(at, piece));
    boost::beast::error_code ec;
    const std::size_t used = p.put(boost::asio::buffer(held), ec);
    held.erase(0, used);
    if (ec == bhttp::error::need_more) continue;
    if (ec) return ec;
  }
  return {};
}

}  // namespace

TEST(RequestParser, FillsTheRequestAsItIsParsed) {
  const std::string text =
      "POST /webmcp/mcp?x=1&y=2 HTTP/1.1\r\nHost: 127.0.0.1:1\r\nmcp-session-id: abc\r\nX-Two: a\r\n"
      "X-Two: b\r\nContent-Length: 11\r\n\r\nhello world";
  for (std::size_t piece : {std::size_t{1}, std::size_t{7}, text.size()}) {
    Request r;
    RequestParser p(r);
    ASSERT_FALSE(feed(p, text, piece)) << piece;
    ASSERT_TRUE(p.is_done());
    EXPECT_EQ(p.version(), 11u);
    EXPECT_EQ(r.method, "POST");
    EXPECT_EQ(r.target, "/webmcp/mcp?x=1&y=2");
    EXPECT_EQ(r.path, "/webmcp/mcp");
    EXPECT_EQ(r.query, "x=1&y=2");
    ASSERT_EQ(r.headers.size(), 5u);
    EXPECT_EQ(r.headers[1].name, "mcp-session-id");  // as sent
    EXPECT_EQ(r.header("Mcp-Session-Id"), "abc");
    EXPECT_EQ(r.header_count("x-two"), 2u);
    EXPECT_EQ(r.headers[3].value, "b");
    EXPECT_EQ(r.body, "hello world");
  }
}

TEST(RequestParser, JoinsAChunkedBody) {
  Request r;
  RequestParser p(r);
  ASSERT_FALSE(feed(p, "PUT /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n6;x=y\r\n world\r\n0\r\n\r\n", 3));
  EXPECT_TRUE(p.is_done());
  EXPECT_EQ(r.path, "/a");
  EXPECT_TRUE(r.query.empty());
  EXPECT_EQ(r.body, "hello world");
}

TEST(RequestParser, DropsAChunkedBodysTrailerFields) {
  // Trailers come after the head's checks and the gate's reading: none may add to the fields.
  Request r;
  RequestParser p(r);
  ASSERT_FALSE(feed(p, "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n"
                       "Content-Type: application/json\r\nConnection: upgrade\r\nAuthorization: Bearer x\r\n\r\n"));
  EXPECT_TRUE(p.is_done());
  EXPECT_EQ(r.body, "{}");
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_FALSE(r.header("Content-Type"));
  EXPECT_FALSE(r.header("Connection"));
  EXPECT_TRUE(leuria::http::keep_alive(r, p.version()));
}

TEST(RequestParser, KeepsBeastsLimitsAndRefusals) {
  {
    Request r;
    RequestParser p(r);
    p.body_limit(10);
    EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"), bhttp::error::body_limit);
    EXPECT_EQ(r.header("Host"), "h");  // the fields are there for the handler's gate
  }
  {
    Request r;
    RequestParser p(r);
    p.body_limit(10);
    EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n6\r\nhello \r\n6\r\nworld!\r\n0\r\n\r\n"),
              bhttp::error::body_limit);
  }
  for (const char* bad : {"GET / HTTP/1.1\r\nHost : h\r\n\r\n", "GET / HTTP/1.1\r\nBad\x01Name: h\r\n\r\n",
                          "GET / HTTP/1.1\r\nX: a\x7f\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET  / HTTP/1.1\r\n\r\n"}) {
    Request r;
    RequestParser p(r);
    EXPECT_TRUE(feed(p, bad)) << bad;
  }
}

TEST(RequestParser, KeepAliveAsBeastReadsIt) {
  struct Case {
    const char* text;
    bool keep;
  };
  for (const Case& c : {Case{"GET / HTTP/1.1\r\n\r\n", true}, Case{"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
                        Case{"GET / HTTP/1.1\r\nConnection: Keep-Alive, CLOSE\r\n\r\n", false},
                        Case{"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true},
                        Case{"GET / HTTP/1.0\r\n\r\n", false}, Case{"GET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n", true},
                        Case{"GET / HTTP/1.0\r\nConnection: upgrade\r\n\r\n", false}}) {
    Request r;
    RequestParser p(r);
    ASSERT_FALSE(feed(p, c.text)) << c.text;
    EXPECT_EQ(leuria::http::keep_alive(r, p.version()), c.keep) << c.text;
    EXPECT_EQ(leuria::http::to_beast(r, p.version()).keep_alive(), c.keep) << c.text;  // Beast's own answer
  }
}

TEST(RequestParser, WebSocketUpgradeAsBeastReadsIt) {
  struct Case {
    const char* text;
    bool upgrade;
  };
  for (const Case& c :
       {Case{"GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", true},
        Case{"GET /ws HTTP/1.1\r\nConnection: keep-alive, upgrade\r\nUpgrade: WebSocket\r\n\r\n", true},
        Case{"POST /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
        Case{"GET /ws HTTP/1.0\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n", false},
        Case{"GET /ws HTTP/1.1\r\nConnection: keep-alive\r\nUpgrade: websocket\r\n\r\n", false},
        Case{"GET /ws HTTP/1.1\r\nConnection: Upgrade\r\nUpgrade: h2c\r\n\r\n", false},
        Case{"GET /ws HTTP/1.1\r\nConnection: Upgrade\r\n\r\n", false}}) {
    Request r;
    RequestParser p(r);
    ASSERT_FALSE(feed(p, c.text)) << c.text;
    EXPECT_EQ(leuria::http::is_websocket_upgrade(r, p.version()), c.upgrade) << c.text;
    EXPECT_EQ(boost::beast::websocket::is_upgrade(leuria::http::to_beast(r, p.version())), c.upgrade) << c.text;
  }
}

TEST(RequestParser, BeastsMessageForTheHandshakeHasEveryField) {
  Request r;
  RequestParser p(r);
  ASSERT_FALSE(feed(p, "GET /ws?token=t HTTP/1.1\r\nHost: h\r\nSec-WebSocket-Key: k\r\nX-A: 1\r\nX-A: 2\r\n\r\n"));
  const auto m = leuria::http::to_beast(r, p.version());
  EXPECT_EQ(m.method(), bhttp::verb::get);
  EXPECT_EQ(m.target(), "/ws?token=t");
  EXPECT_EQ(m.version(), 11u);
  EXPECT_EQ(m[bhttp::field::sec_websocket_key], "k");
  EXPECT_EQ(std::distance(m.begin(), m.end()), 4);
}

// A kept-alive connection's requests, as serve_connection reads them: one Request recycled between
// them, the fields written over the last request's (recycle_request).
TEST(RequestParser, ARecycledRequestHoldsOnlyItsOwnRequest) {
  Request r;
  std::vector<leuria::http::Header> spare;
  const std::string texts[] = {
      "POST /a?q=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok\r\nX-One: 1\r\nX-Two: 2\r\nContent-Length: 3\r\n\r\nabc",
      "GET /b HTTP/1.1\r\nHost: h2\r\n\r\n",  // fewer fields, no body, no query
      "POST /c HTTP/1.1\r\nhost: h3\r\nA: a\r\nB: b\r\nC: c\r\nD: d\r\nE: e\r\nContent-Length: 2\r\n\r\nxy",  // more
      "POST /a?q=1 HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok\r\nX-One: 1\r\nX-Two: 2\r\nContent-Length: 3\r\n\r\nabc",
      // trailer fields are dropped here too, not written over the fields
      "POST /d HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\nAuthorization: Bearer x\r\nA: a\r\n\r\n",
  };
  for (std::size_t i = 0; i < std::size(texts); ++i) {
    if (i > 0) {
      r.refused = 413;
      r.websocket = true;
      r.peer = 7;
      leuria::http::recycle_request(r, spare);
      EXPECT_EQ(r.refused, 0u);
      EXPECT_FALSE(r.websocket);
      EXPECT_EQ(r.peer, -1);
      EXPECT_TRUE(r.headers.empty() && r.body.empty() && r.method.empty() && r.query.empty());
    }
    RequestParser p(r, &spare);
    ASSERT_FALSE(feed(p, texts[i], i + 1)) << i;
    ASSERT_TRUE(p.is_done()) << i;
    Request fresh;
    RequestParser q(fresh);
    ASSERT_FALSE(feed(q, texts[i]));
    EXPECT_EQ(r.method, fresh.method) << i;
    EXPECT_EQ(r.target, fresh.target) << i;
    EXPECT_EQ(r.path, fresh.path) << i;
    EXPECT_EQ(r.query, fresh.query) << i;
    EXPECT_EQ(r.body, fresh.body) << i;
    ASSERT_EQ(r.headers.size(), fresh.headers.size()) << i;
    for (std::size_t f = 0; f < r.headers.size(); ++f) {
      EXPECT_EQ(r.headers[f].name, fresh.headers[f].name) << i;
      EXPECT_EQ(r.headers[f].value, fresh.headers[f].value) << i;
    }
  }
}

namespace {
// A connection's Request after it served `first`, recycled for the next request.
void served(Request& r, std::vector<leuria::http::Header>& spare, std::string_view first) {
  RequestParser p(r, &spare);
  ASSERT_FALSE(feed(p, first));
  leuria::http::recycle_request(r, spare);
}
}  // namespace

TEST(RequestParser, ARecycledRequestHasNoFieldsUntilItsHeadIsWhole) {
  Request r;
  std::vector<leuria::http::Header> spare;
  served(r, spare, "GET / HTTP/1.1\r\nHost: h\r\nAuthorization: Bearer tok\r\n\r\n");
  RequestParser p(r, &spare);
  p.eager(true);
  boost::beast::error_code ec;
  const std::string part = "GET / HTTP/1.1\r\nX-A: 1\r\n";
  p.put(boost::asio::buffer(part), ec);
  EXPECT_EQ(ec, bhttp::error::need_more);
  EXPECT_TRUE(r.headers.empty());  // neither this head's first field nor the last request's bearer
  EXPECT_FALSE(r.header("authorization"));
}

TEST(RequestParser, ARecycledRequestKeepsOnlyBoundedBuffers) {
  Request r;
  std::vector<leuria::http::Header> spare;
  std::string text = "POST / HTTP/1.1\r\nHost: h\r\nX-Long: " + std::string(1000, 'v') + "\r\n";
  for (int i = 0; i < 40; ++i) text += "X-F" + std::to_string(i) + ": v\r\n";
  const std::string body(20000, 'b');
  text += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  RequestParser p(r, &spare);
  p.body_limit(1 << 20);
  ASSERT_FALSE(feed(p, text));
  ASSERT_EQ(r.headers.size(), 43u);
  leuria::http::recycle_request(r, spare);
  EXPECT_LE(spare.size(), 32u);
  for (const auto& h : spare) EXPECT_LE(h.value.capacity(), 256u);
  EXPECT_LE(r.body.capacity(), 16u * 1024);
}

TEST(RequestParser, ARecycledRequestTakesItsFieldsWhenTheLengthIsOverTheLimit) {
  // Beast finds the body limit after the last field and stops before the head's end: the server takes
  // the fields itself, so that the gate reads the Host and Origin of a request it answers with 413.
  Request r;
  std::vector<leuria::http::Header> spare;
  served(r, spare, "GET / HTTP/1.1\r\nHost: old\r\nX-Old: 1\r\nX-Old2: 2\r\n\r\n");
  RequestParser p(r, &spare);
  p.body_limit(10);
  EXPECT_EQ(feed(p, "POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 11\r\n\r\n"), bhttp::error::body_limit);
  p.take_fields();
  ASSERT_EQ(r.headers.size(), 2u);
  EXPECT_EQ(r.header("host"), "h");
  p.take_fields();  // once only
  EXPECT_EQ(r.headers.size(), 2u);
}
