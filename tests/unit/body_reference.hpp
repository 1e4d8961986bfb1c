// The reference reading of a chunked response body: Beast's own parser, which http/client.cpp used for
// bodies before http::BodyDecoder, and the oracle the decoder must agree with: the unit tests
// (tests/unit/body_decoder_test.cpp) and the fuzz target fuzz/targets/chunked_body.cpp.
// Also the client's way of feeding the decoder (what a read leaves undone comes again with the next).
#pragma once
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/http.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "http/body_decoder.hpp"

namespace leuria::oracle {

struct BodyRead {
  bool ok = false;   // the body is whole and well formed
  std::string data;  // what was read before the end or the fault
  bool last_chunk = false;  // (ours only) the last chunk came before any fault
};

// Beast reading `body` as a chunked response's body, all at once, then the connection's close.
inline BodyRead beast_read_chunked(std::string_view body) {
  namespace bhttp = boost::beast::http;
  const std::string text = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + std::string(body);
  bhttp::response_parser<bhttp::string_body> parser;
  parser.body_limit(boost::none);
  parser.eager(true);
  boost::beast::error_code ec;
  std::size_t at = 0;
  // Every byte is there at once: need_more means the input ended (Beast must not be asked again
  // without more: its last chunk's parse asserts that a repeat call brings at least 5 bytes).
  while (!parser.is_done() && at < text.size()) {
    const std::size_t used = parser.put(boost::asio::buffer(text.data() + at, text.size() - at), ec);
    at += used;
    if (ec == bhttp::error::need_more) {
      ec = {};
      break;
    }
    if (ec || used == 0) break;
  }
  BodyRead out;
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  out.ok = !ec && parser.is_done();
  out.data = parser.get().body();
  return out;
}

// The decoder reading `body` in the pieces given (their sizes; the rest in one piece), as the
// client feeds it: each read's bytes after what the last decode left undone.
inline BodyRead decoder_read(http::BodyDecoder decoder, std::string_view body, const std::vector<std::size_t>& pieces) {
  BodyRead out;
  std::string buffer;
  std::size_t at = 0;
  boost::system::error_code ec;
  auto feed = [&](std::size_t n) {
    buffer.append(body.substr(at, n));
    at += n;
    const auto d = decoder.decode(buffer.data(), buffer.size(), ec);
    out.data.append(buffer.data(), d.body);
    buffer.erase(0, d.used);
  };
  for (std::size_t n : pieces) {
    if (ec || decoder.done() || at >= body.size()) break;
    feed(std::min(n, body.size() - at));
  }
  if (!ec && !decoder.done() && at < body.size()) feed(body.size() - at);
  out.last_chunk = decoder.last_chunk_seen();
  out.ok = !ec && decoder.end_of_input();
  return out;
}

}  // namespace leuria::oracle
