#include "core/origin.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>

#include "core/ascii.hpp"

namespace leuria::core {
namespace {

bool scheme_char(char c, bool first) {
  bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
  if (first) return alpha;
  return alpha || (c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.';
}

// RFC 3986 reg-name characters, minus percent-encoding (browsers send hosts in punycode).
bool host_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_' || c == '~';
}

std::uint16_t default_port(std::string_view scheme) {
  if (scheme == "http") return 80;
  if (scheme == "https") return 443;
  return 0;
}

}  // namespace

std::string Origin::serialized() const {
  std::string out = scheme + "://" + host;
  if (port != 0) out += ":" + std::to_string(port);
  return out;
}

std::optional<Origin> parse_origin(std::string_view text) {
  auto sep = text.find("://");
  if (sep == std::string_view::npos || sep == 0) return std::nullopt;
  Origin o;
  for (std::size_t i = 0; i < sep; ++i) {
    if (!scheme_char(text[i], i == 0)) return std::nullopt;
    o.scheme.push_back(ascii_lower(text[i]));
  }
  std::string_view rest = text.substr(sep + 3);
  if (!rest.empty() && rest.back() == '/') rest.remove_suffix(1);
  if (rest.empty()) return std::nullopt;

  std::string_view host = rest;
  std::string_view port;
  if (rest.front() == '[') {
    auto close = rest.find(']');
    if (close == std::string_view::npos || close < 3) return std::nullopt;
    host = rest.substr(0, close + 1);
    for (char c : host.substr(1, host.size() - 2))
      if (!(std::isxdigit(static_cast<unsigned char>(c)) || c == ':' || c == '.')) return std::nullopt;
    std::string_view after = rest.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return std::nullopt;
      port = after.substr(1);
      if (port.empty()) return std::nullopt;
    }
  } else {
    auto colon = rest.find(':');
    if (colon != std::string_view::npos) {
      host = rest.substr(0, colon);
      port = rest.substr(colon + 1);
      if (port.empty()) return std::nullopt;
    }
    if (host.empty()) return std::nullopt;
    if (!std::all_of(host.begin(), host.end(), host_char)) return std::nullopt;
  }
  for (char c : host) o.host.push_back(ascii_lower(c));

  if (!port.empty()) {
    if (port.size() > 5) return std::nullopt;
    unsigned value = 0;
    auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (ec != std::errc{} || end != port.data() + port.size() || value == 0 || value > 65535)
      return std::nullopt;
    o.port = static_cast<std::uint16_t>(value);
  }
  if (o.port == default_port(o.scheme)) o.port = 0;
  return o;
}

std::optional<std::string> normalize_web_origin(std::string_view text) {
  auto o = parse_origin(text);
  if (!o || !o->is_web()) return std::nullopt;
  return o->serialized();
}

}  // namespace leuria::core
