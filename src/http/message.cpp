#include "http/message.hpp"

#include "http/chars.hpp"

#include <boost/json/serialize.hpp>
#include <poll.h>

#include "core/ascii.hpp"

namespace leuria::http {

Response json_response(unsigned status, const boost::json::value& body) {
  return json_text_response(status, boost::json::serialize(body));
}

Response json_text_response(unsigned status, std::string body) {
  Response r;
  r.status = status;
  r.headers.reserve(2);
  r.headers.push_back({"Content-Type", "application/json"});
  r.headers.push_back({"Cache-Control", "no-store"});
  r.body = std::move(body);
  return r;
}

bool iequals(std::string_view a, std::string_view b) { return core::ascii_iequals(a, b); }

std::optional<std::string_view> Request::header(std::string_view name) const {
  for (auto& h : headers)
    if (iequals(h.name, name)) return std::string_view(h.value);
  return std::nullopt;
}

std::size_t Request::header_count(std::string_view name) const {
  std::size_t n = 0;
  for (auto& h : headers)
    if (iequals(h.name, name)) ++n;
  return n;
}

std::string_view Request::bearer() const {
  auto auth = header("authorization");
  if (!auth || auth->size() < 7 || !iequals(auth->substr(0, 7), "bearer ")) return {};
  auto token = auth->substr(7);
  while (!token.empty() && token.front() == ' ') token.remove_prefix(1);
  while (!token.empty() && token.back() == ' ') token.remove_suffix(1);
  return token;
}

bool peer_gone(const Request& req) {
  if (req.peer < 0) return false;
  // POLLRDHUP sees the client's FIN even behind bytes it sent first (a peek at the next byte would not).
  pollfd p{req.peer, POLLIN | POLLRDHUP, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  return (p.revents & (POLLRDHUP | POLLHUP | POLLERR)) != 0;
}

void Response::set(std::string name, std::string value) {
  for (auto& h : headers)
    if (iequals(h.name, name)) {
      h.value = std::move(value);
      return;
    }
  headers.push_back({std::move(name), std::move(value)});
}

std::optional<std::string_view> Response::header(std::string_view name) const {
  for (auto& h : headers)
    if (iequals(h.name, name)) return std::string_view(h.value);
  return std::nullopt;
}

namespace {
std::string decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '+') out += ' ';
    else if (s[i] == '%' && i + 2 < s.size() && hex_digit(s[i + 1]) >= 0 && hex_digit(s[i + 2]) >= 0) {
      out += static_cast<char>(hex_digit(s[i + 1]) * 16 + hex_digit(s[i + 2]));
      i += 2;
    } else out += s[i];
  }
  return out;
}
}  // namespace

std::optional<std::string> query_param(std::string_view query, std::string_view name) {
  while (!query.empty()) {
    auto amp = query.find('&');
    auto part = query.substr(0, amp);
    auto eq = part.find('=');
    if (decode(part.substr(0, eq)) == name) return eq == std::string_view::npos ? "" : decode(part.substr(eq + 1));
    if (amp == std::string_view::npos) break;
    query.remove_prefix(amp + 1);
  }
  return std::nullopt;
}

}  // namespace leuria::http
