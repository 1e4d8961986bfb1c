// Who is calling: told apart by the Origin header (see the protocol's Conventions, "Callers").
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace leuria::core {

enum class CallerKind {
  local,       // no Origin: a process of the visitor's (CLI, agent, curl)
  own_page,    // http://127.0.0.1:<port> or http://localhost:<port>: the engine's approval page
  desktop,     // the desktop app's webview origins; only meaningful with the admin token
  web,         // any other http(s) origin: a web page
  bad_origin,  // anything else ("null", file:, chrome-extension:, malformed, several Origins)
};

struct Caller {
  CallerKind kind = CallerKind::local;
  std::string origin;      // normalized (web, own_page, desktop); empty for local
  std::string raw_origin;  // as sent, echoed in Access-Control-Allow-Origin
};

// origin_header: the value of the single Origin header, or nullopt when there is none.
Caller classify_caller(std::optional<std::string_view> origin_header, std::uint16_t port);

// tauri://localhost, http://tauri.localhost, https://tauri.localhost.
bool is_desktop_origin(std::string_view normalized_origin);

}  // namespace leuria::core
