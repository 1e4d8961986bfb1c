// Who is calling: told apart by the Origin header (see the protocol's Conventions, "Callers"), and
// by Sec-Fetch-Site when a browser left the Origin out.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leuria::core {

enum class CallerKind {
  local,       // no Origin and no browser's word for another site: a process of the visitor's (CLI, agent, curl)
  own_page,    // http://127.0.0.1:<port> or http://localhost:<port>: the engine's approval page
  desktop,     // the desktop app's webview origins; only meaningful with the admin token
  web,         // any other http(s) origin: a web page; with an empty origin, one that didn't say which
  bad_origin,  // anything else ("null", file:, chrome-extension:, malformed, several Origins)
};

struct Caller {
  CallerKind kind = CallerKind::local;
  std::string origin;      // normalized (web, own_page, desktop); empty for local and for a web page without Origin
  std::string raw_origin;  // as sent, echoed in Access-Control-Allow-Origin; empty when there is none to echo
};

// origin_header: the value of the single Origin header, or nullopt when there is none.
// sec_fetch_site: the Sec-Fetch-Site header's value, or nullopt. Browsers leave Origin out of
// <img>, <script>, navigations and form GETs, but say where a request comes from: anything but
// "same-origin" (the engine's own page) or "none" (the visitor typing or opening a URL) is another
// page, a web caller with no origin, which no grant and no pairing request can ever match.
Caller classify_caller(std::optional<std::string_view> origin_header, std::uint16_t port,
                       std::optional<std::string_view> sec_fetch_site = std::nullopt);

// tauri://localhost, http://tauri.localhost, https://tauri.localhost.
bool is_desktop_origin(std::string_view normalized_origin);

}  // namespace leuria::core
