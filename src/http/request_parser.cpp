#include "http/request_parser.hpp"

#include <boost/beast/http/rfc7230.hpp>

namespace leuria::http {

namespace bhttp = boost::beast::http;

void RequestParser::on_request_impl(bhttp::verb, string_view method, string_view target, int version, error_code&) {
  version_ = static_cast<unsigned>(version);
  out_.headers.reserve(16);  // one allocation for a browser's or an MCP client's usual fields
  out_.method.assign(method.data(), method.size());
  out_.target.assign(target.data(), target.size());
  const std::string_view t(target.data(), target.size());
  const auto q = t.find('?');
  out_.path.assign(t.substr(0, q));
  if (q != std::string_view::npos) out_.query.assign(t.substr(q + 1));
}

void RequestParser::on_field_impl(bhttp::field, string_view name, string_view value, error_code&) {
  // A chunked body's trailer fields come through here too, after the head's checks and the gate's
  // reading: they are dropped, so that nothing can add a Content-Type, an Authorization or a
  // Connection behind the checks (a proxy in front may pass trailers it would have stripped as fields).
  if (is_header_done()) return;
  out_.headers.push_back({std::string(name.data(), name.size()), std::string(value.data(), value.size())});
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& length, error_code&) {
  // Beast has checked the length against the body limit already.
  if (length) out_.body.reserve(static_cast<std::size_t>(*length));
}

std::size_t RequestParser::on_body_impl(string_view body, error_code&) {
  out_.body.append(body.data(), body.size());
  return body.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code& ec) {
  return on_body_impl(body, ec);  // a chunk's bytes join the body as a length-framed body's do
}

namespace {

bool lists(std::optional<std::string_view> field, const char* token) {
  return field && bhttp::token_list{boost::beast::string_view(field->data(), field->size())}.exists(token);
}

}  // namespace

bool keep_alive(const Request& req, unsigned version) {
  const auto connection = req.header("Connection");
  return version >= 11 ? !lists(connection, "close") : lists(connection, "keep-alive");
}

bool is_websocket_upgrade(const Request& req, unsigned version) {
  return version >= 11 && req.method == "GET" && lists(req.header("Connection"), "upgrade") &&
         lists(req.header("Upgrade"), "websocket");
}

bhttp::request<bhttp::string_body> to_beast(const Request& req, unsigned version) {
  bhttp::request<bhttp::string_body> m;
  m.method_string(req.method);
  m.target(req.target);
  m.version(version);
  for (const auto& h : req.headers) m.insert(h.name, h.value);
  m.body() = req.body;
  return m;
}

}  // namespace leuria::http
