// Origins as the engine compares them: scheme, host and port, lower case, default ports folded.
// Pure functions; no I/O. The Host check lives in host.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leuria::core {

struct Origin {
  std::string scheme;  // lower case, without "://"
  std::string host;    // lower case; IPv6 literals keep their brackets
  std::uint16_t port = 0;  // 0 when absent or equal to the scheme's default

  // "scheme://host[:port]", the form stored in grants.json and compared everywhere.
  std::string serialized() const;
  bool is_web() const { return scheme == "http" || scheme == "https"; }
};

// Parses an Origin header value (or an origin given on the command line or in a link) strictly:
// scheme "://" host [":" port], with nothing after it (a single trailing "/" is tolerated for
// values typed by people). Returns nullopt for "null", opaque or malformed values.
std::optional<Origin> parse_origin(std::string_view text);

// The normalized form of an http(s) origin, or nullopt when it isn't one.
std::optional<std::string> normalize_web_origin(std::string_view text);

}  // namespace leuria::core
