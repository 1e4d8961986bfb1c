// Fuzz target: the Host rule and the Origin normaliser (core/host.cpp, core/origin.cpp,
// core/caller.cpp), each input used as a Host value, an Origin value and a Sec-Fetch-Site value,
// for a few ports (5000, the default ports 80 and 443, 1).
//
// Checks, against oracles written here from the rules rather than from the code:
// - host_allowed accepts exactly "127.0.0.1:<port>" and "localhost:<port>" (any case), nothing else;
// - parse_origin accepts only scheme "://" host [":" port] [one "/"]: a lower-case scheme of
//   [a-z][a-z0-9+.-]*, a non-empty lower-case host of [a-z0-9._~-] or a bracketed [0-9a-f:.] literal,
//   a port 1..65535 other than the scheme's default (0 when absent); its serialisation parses back
//   to the same origin and equals the input up to case, the default port and the trailing "/";
// - normalize_web_origin gives only http(s) origins, and is idempotent;
// - classify_caller: own_page only for the two engine origins, desktop only for the three webview
//   origins, web only for a normalised http(s) origin, never local when an Origin was sent; without
//   Origin, local exactly when Sec-Fetch-Site is absent, "same-origin" or "none".
#include <cstdint>
#include <string>

#include "core/ascii.hpp"
#include "core/caller.hpp"
#include "core/host.hpp"
#include "core/origin.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;

namespace {

bool all_of(std::string_view s, std::string_view allowed) { return s.find_first_not_of(allowed) == std::string_view::npos; }

constexpr std::string_view kLowerHost = "abcdefghijklmnopqrstuvwxyz0123456789._~-";
constexpr std::string_view kLiteral = "0123456789abcdef:.";

void check_host(std::string_view v, std::uint16_t port) {
  const std::string p = ":" + std::to_string(port);
  const bool expected = v == "127.0.0.1" + p || core::ascii_iequals(v, "localhost" + p);
  check(core::host_allowed(v, port) == expected, "host_allowed disagrees with the Host rule");
}

void check_origin(std::string_view v) {
  auto o = core::parse_origin(v);
  auto web = core::normalize_web_origin(v);
  if (!o) {
    check(!web, "normalize_web_origin accepted what parse_origin refused");
    return;
  }
  check(!o->scheme.empty() && o->scheme[0] >= 'a' && o->scheme[0] <= 'z' &&
            all_of(o->scheme, "abcdefghijklmnopqrstuvwxyz0123456789+.-"),
        "a scheme outside [a-z][a-z0-9+.-]*");
  check(!o->host.empty(), "an empty host");
  if (o->host.front() == '[')
    check(o->host.size() >= 4 && o->host.back() == ']' && all_of(o->host.substr(1, o->host.size() - 2), kLiteral),
          "a malformed IP literal");
  else
    check(all_of(o->host, kLowerHost), "a host outside [a-z0-9._~-]");
  check(!(o->scheme == "http" && o->port == 80) && !(o->scheme == "https" && o->port == 443), "a default port kept");

  const std::string s = o->serialized();
  auto again = core::parse_origin(s);
  check(again && again->serialized() == s && again->scheme == o->scheme && again->host == o->host &&
            again->port == o->port,
        "a serialised origin does not parse back to itself");
  // The input is scheme "://" host, then nothing or ":" and 1 to 5 digits naming the port (or the
  // scheme's default when the port was folded), then at most one "/", all up to case.
  std::string_view in = v;
  if (in.ends_with("/")) in.remove_suffix(1);
  const std::string lowered = core::ascii_lower(in);
  const std::string prefix = o->scheme + "://" + o->host;
  check(lowered.starts_with(prefix), "the normalised origin is not the input's own text");
  const std::string_view port = std::string_view(lowered).substr(prefix.size());
  if (port.empty()) {
    check(o->port == 0, "a port from nowhere");
  } else {
    check(port[0] == ':' && port.size() >= 2 && port.size() <= 6 && all_of(port.substr(1), "0123456789"),
          "more than a port after the host");
    const unsigned n = static_cast<unsigned>(std::stoul(std::string(port.substr(1))));
    const unsigned folded = o->scheme == "http" ? 80 : o->scheme == "https" ? 443 : 0;
    check(n == o->port || (o->port == 0 && n == folded), "a port other than the one written");
  }

  if (web) {
    check(o->is_web() && *web == s, "normalize_web_origin gave a non-web origin or another form");
    check(core::normalize_web_origin(*web) == web, "normalize_web_origin is not idempotent");
  } else {
    check(!o->is_web(), "normalize_web_origin refused an http(s) origin");
  }
}

void check_caller(std::string_view v, std::uint16_t port) {
  using K = core::CallerKind;
  const auto c = core::classify_caller(v, port, std::nullopt);
  check(c.kind != K::local, "a request with an Origin counted as a local process");
  check(c.raw_origin == v, "the echoed origin is not the one sent");
  const std::string p = std::to_string(port);
  switch (c.kind) {
    case K::own_page:
      check(c.origin == "http://127.0.0.1:" + p || c.origin == "http://localhost:" + p, "a foreign own_page");
      break;
    case K::desktop: check(core::is_desktop_origin(c.origin), "a foreign desktop origin"); break;
    case K::web: check(core::normalize_web_origin(v) == c.origin, "a web caller with another origin"); break;
    case K::bad_origin: check(!core::normalize_web_origin(v), "an http(s) origin refused"); break;
    case K::local: break;
  }
  // Sec-Fetch-Site without Origin: a browser on another page unless it says same-origin or none.
  const auto b = core::classify_caller(std::nullopt, port, v);
  const bool local = v == "same-origin" || v == "none";
  check(b.kind == (local ? K::local : K::web) && b.origin.empty() && b.raw_origin.empty(),
        "Sec-Fetch-Site misread");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view v(reinterpret_cast<const char*>(data), size);
  check_origin(v);
  for (std::uint16_t port : {std::uint16_t{5000}, std::uint16_t{80}, std::uint16_t{443}, std::uint16_t{1}}) {
    check_host(v, port);
    check_caller(v, port);
  }
  return 0;
}
