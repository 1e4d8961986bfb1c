// The HTTP client's request as sent (http::request_text): the bytes a model server reads, Beast's
// parser reading them back as the request that was meant, and the requests refused because a
// server could read them as two.
#include <gtest/gtest.h>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http.hpp>
#include <string>
#include <vector>

#include "http/client.hpp"

using namespace leuria;
namespace bhttp = boost::beast::http;

namespace {

std::string text_of(std::string_view method, std::string_view target, const std::vector<http::Header>& headers,
                    std::string_view body) {
  auto text = http::request_text(method, target, "127.0.0.1:11434", headers, body);
  EXPECT_TRUE(text.has_value()) << (text ? "" : text.error());
  return text ? *text : std::string();
}

std::string refusal(std::string_view method, std::string_view target, std::string_view host,
                    const std::vector<http::Header>& headers) {
  auto text = http::request_text(method, target, host, headers, "{}");
  EXPECT_FALSE(text.has_value());
  return text ? std::string() : text.error();
}

}  // namespace

TEST(HttpRequestText, APostCarriesItsFieldsInOrderAndItsLength) {
  const std::string body = R"({"model":"m","stream":true})";
  EXPECT_EQ(text_of("POST", "/v1/chat/completions",
                    {{"Content-Type", "application/json"}, {"Accept", "text/event-stream"}}, body),
            "POST /v1/chat/completions HTTP/1.1\r\n"
            "Host: 127.0.0.1:11434\r\n"
            "User-Agent: leuria/" LEURIA_VERSION "\r\n"
            "Content-Type: application/json\r\n"
            "Accept: text/event-stream\r\n"
            "Content-Length: 27\r\n"
            "\r\n" +
                body);
}

TEST(HttpRequestText, AGetWithoutABodyHasNoLengthAndAnEmptyPostHasZero) {
  EXPECT_EQ(text_of("GET", "/v1/models?x=1", {}, ""),
            "GET /v1/models?x=1 HTTP/1.1\r\nHost: 127.0.0.1:11434\r\nUser-Agent: leuria/" LEURIA_VERSION "\r\n\r\n");
  EXPECT_NE(text_of("POST", "/api/pull", {}, "").find("\r\nContent-Length: 0\r\n\r\n"), std::string::npos);
}

TEST(HttpRequestText, ALaterFieldReplacesAnEarlierOneOfTheSameName) {
  const std::string text = text_of("GET", "/", {{"user-agent", "probe/1"}, {"X-A", "1"}, {"x-a", "2"}}, "");
  EXPECT_EQ(text, "GET / HTTP/1.1\r\nHost: 127.0.0.1:11434\r\nuser-agent: probe/1\r\nx-a: 2\r\n\r\n");
}

TEST(HttpRequestText, TheCallersFramingFieldsAreDropped) {
  const std::string text =
      text_of("POST", "/", {{"Content-Length", "999"}, {"Transfer-Encoding", "chunked"}}, "abc");
  EXPECT_EQ(text.find("999"), std::string::npos);
  EXPECT_EQ(text.find("chunked"), std::string::npos);
  EXPECT_NE(text.find("\r\nContent-Length: 3\r\n\r\nabc"), std::string::npos);
}

TEST(HttpRequestText, BeastsParserReadsTheRequestThatWasMeant) {
  const std::string body = "{\"prompt\":\"caf\xC3\xA9\"}";
  const std::string text = text_of("POST", "/api/generate?keep=1",
                                   {{"Authorization", "Bearer sk-1"}, {"Content-Type", "application/json"}}, body);
  bhttp::request_parser<bhttp::string_body> parser;
  boost::beast::error_code ec;
  std::size_t used = 0;
  while (!ec && !parser.is_done() && used < text.size())  // put() stops after the head
    used += parser.put(boost::asio::buffer(text.data() + used, text.size() - used), ec);
  ASSERT_FALSE(ec) << ec.message();
  EXPECT_EQ(used, text.size());
  ASSERT_TRUE(parser.is_done());
  const auto& req = parser.get();
  EXPECT_EQ(req.method(), bhttp::verb::post);
  EXPECT_EQ(req.target(), "/api/generate?keep=1");
  EXPECT_EQ(req.version(), 11u);
  EXPECT_EQ(req[bhttp::field::host], "127.0.0.1:11434");
  EXPECT_EQ(req[bhttp::field::authorization], "Bearer sk-1");
  EXPECT_EQ(req.body(), body);
  EXPECT_TRUE(req.keep_alive());
}

TEST(HttpRequestText, ARequestThatCouldBeReadAsTwoIsRefusedWithoutItsSecret) {
  const std::string secret = "sk-abc\r\nX-Injected: 1";
  const std::string why = refusal("POST", "/v1/chat/completions", "127.0.0.1", {{"Authorization", "Bearer " + secret}});
  EXPECT_EQ(why, "The Authorization header holds a line break.");
  EXPECT_EQ(why.find("sk-abc"), std::string::npos);
  EXPECT_FALSE(refusal("POST", "/", "127.0.0.1", {{"X-A", std::string("a\0b", 3)}}).empty());
  EXPECT_FALSE(refusal("POST", "/", "127.0.0.1", {{"X-A", "a\nb"}}).empty());
  EXPECT_EQ(refusal("POST", "/", "127.0.0.1", {{"Bad Name", "x"}}), "A header's name is not an HTTP token.");
  EXPECT_FALSE(refusal("POST", "/", "127.0.0.1", {{"", "x"}}).empty());
  EXPECT_EQ(refusal("PO ST", "/", "127.0.0.1", {}), "The request's method is not an HTTP token.");
  EXPECT_FALSE(refusal("POST", "/a b", "127.0.0.1", {}).empty());
  EXPECT_FALSE(refusal("POST", "/a\r\nb", "127.0.0.1", {}).empty());
  EXPECT_FALSE(refusal("POST", "", "127.0.0.1", {}).empty());
  EXPECT_FALSE(refusal("POST", "/", "evil\r\nX: 1", {}).empty());
}
