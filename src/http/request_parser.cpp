#include "http/request_parser.hpp"

#include <boost/beast/http/rfc7230.hpp>

namespace leuria::http {

namespace bhttp = boost::beast::http;

void RequestParser::on_request_impl(bhttp::verb, string_view method, string_view target, int version, error_code&) {
  version_ = static_cast<unsigned>(version);
  (spare_ ? *spare_ : out_.headers).reserve(16);  // one allocation for a browser's or an MCP client's usual fields
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
  if (spare_) {
    if (fields_ < spare_->size()) {
      Header& h = (*spare_)[fields_];
      h.name.assign(name.data(), name.size());
      h.value.assign(value.data(), value.size());
    } else {
      spare_->push_back({std::string(name.data(), name.size()), std::string(value.data(), value.size())});
    }
    ++fields_;
    return;
  }
  out_.headers.push_back({std::string(name.data(), name.size()), std::string(value.data(), value.size())});
}

void RequestParser::on_header_impl(error_code&) { take_fields(); }

void RequestParser::take_fields() {
  if (!spare_ || taken_) return;
  taken_ = true;
  spare_->resize(fields_);  // fewer fields than the last request's: the rest go
  out_.headers.swap(*spare_);
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

void recycle_request(Request& req, std::vector<Header>& spare) {
  // What is kept is bounded, or a client could grow it request by request (a long value in another
  // field each time): at most 32 fields, each string's buffer at most 256 bytes (a bearer token, a
  // browser's Accept or User-Agent fit); a body's buffer over 16 KB goes too.
  constexpr std::size_t kKeptFields = 32, kKeptField = 256, kKeptBody = 16 * 1024;
  spare.swap(req.headers);
  if (spare.size() > kKeptFields) spare.resize(kKeptFields);
  if (spare.capacity() > 2 * kKeptFields) spare.shrink_to_fit();
  for (auto& h : spare) {
    if (h.name.capacity() > kKeptField) std::string().swap(h.name);
    if (h.value.capacity() > kKeptField) std::string().swap(h.value);
  }
  std::vector<Header> headers = std::move(req.headers);  // what the last swap left: entries to drop
  headers.clear();
  if (headers.capacity() > 2 * kKeptFields) headers = std::vector<Header>();
  std::string body = std::move(req.body);
  body.clear();
  if (body.capacity() > kKeptBody) std::string().swap(body);  // (moving an empty string in keeps the buffer)
  req = Request{};  // every other field as a new request's, whatever fields Request gains
  req.headers = std::move(headers);
  req.body = std::move(body);
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
