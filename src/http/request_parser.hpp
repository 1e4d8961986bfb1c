// Messages: a request read by Beast's parser straight into http::Request. Beast checks the bytes
// (the request line, each field's syntax, the body's framing and limits) and hands each part over
// as it is parsed; nothing is kept in Beast's own field list. Reading into Beast's message and then
// copying it to a Request was about a sixth of a kept-alive tool call's instructions (bench
// scenario 4): a node allocated per field, the copy, both destroyed.
#pragma once
#include <boost/beast/http/basic_parser.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstdint>

#include "http/message.hpp"

namespace leuria::http {

class RequestParser final : public boost::beast::http::basic_parser<true> {
 public:
  // Fills `out` (method, target, path, query, the head's fields in order, body); `out` must outlive
  // the parser. A chunked body's trailer fields are checked by Beast and dropped. With `spare` (a
  // kept-alive connection's last request's headers, see recycle_request) the fields are written over
  // its entries, whose strings keep their buffers, and swapped into `out` once the head is whole: a
  // client that sends the same fields again costs no allocation per field. `out` has no headers
  // until then.
  explicit RequestParser(Request& out, std::vector<Header>* spare = nullptr) : out_(out), spare_(spare) {}

  // The request line's version: 10 or 11 (once the request line is parsed).
  unsigned version() const { return version_; }

  // With `spare`: moves the fields parsed so far into `out`. Done by itself once the head is whole;
  // a head Beast stopped in (a refusal, or a length over the body limit, which Beast finds after the
  // last field) needs it called, so the request holds what a parser without `spare` would have put in.
  void take_fields();

 private:
  using error_code = boost::beast::error_code;
  using string_view = boost::beast::string_view;

  void on_request_impl(boost::beast::http::verb, string_view method, string_view target, int version,
                       error_code&) override;
  void on_response_impl(int, string_view, int, error_code&) override {}
  void on_field_impl(boost::beast::http::field, string_view name, string_view value, error_code&) override;
  void on_header_impl(error_code&) override;
  void on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) override;
  std::size_t on_body_impl(string_view body, error_code&) override;
  void on_chunk_header_impl(std::uint64_t, string_view, error_code&) override {}
  std::size_t on_chunk_body_impl(std::uint64_t, string_view body, error_code&) override;
  void on_finish_impl(error_code&) override {}

  Request& out_;
  std::vector<Header>* spare_;
  std::size_t fields_ = 0;  // fields written over spare_'s entries so far
  bool taken_ = false;      // take_fields has moved them into out_
  unsigned version_ = 11;
};

// Readies a kept-alive connection's Request for its next request: every field as a new Request's,
// its headers swapped into `spare` for the next RequestParser to write over, the body's buffer kept
// unless it is large. The fields' strings, allocated and freed on every request, were some 1,500 of
// a tool call's 40,000 instructions (bench scenario 4).
void recycle_request(Request& req, std::vector<Header>& spare);

// Whether the connection stays open after the answer: HTTP/1.1 unless its Connection field lists
// `close`, HTTP/1.0 only if it lists `keep-alive` (the first Connection field, as Beast reads it).
bool keep_alive(const Request& req, unsigned version);

// A WebSocket upgrade (RFC 6455 4.1): GET, HTTP/1.1, Connection listing `upgrade` and Upgrade
// listing `websocket`.
bool is_websocket_upgrade(const Request& req, unsigned version);

// The request as Beast's message, for Beast's WebSocket handshake (once per upgrade).
boost::beast::http::request<boost::beast::http::string_body> to_beast(const Request& req, unsigned version);

}  // namespace leuria::http
