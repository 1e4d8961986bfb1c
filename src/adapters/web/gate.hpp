// The gate every request passes before routing: Host, caller by Origin, silence, CORS.
// Protocol, Conventions. Nothing here reads a body.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "core/caller.hpp"
#include "http/message.hpp"

namespace leuria::web {

struct GateConfig {
  std::uint16_t port = 0;
  bool silence = false;    // app mode: unknown web origins get an empty 403
  bool admin_api = false;  // app mode: /admin/* exists
  std::string admin_token;
};

struct Admission {
  std::optional<http::Response> refusal;  // when set, answer this and nothing else
  core::Caller caller;
  bool cors = false;  // echo the CORS headers on the answer
};

// known_origin: true when the origin has a grant or an uncollected pairing request.
Admission admit(const http::Request& req, const GateConfig& cfg,
                const std::function<bool(const std::string&)>& known_origin);

bool is_admin_path(std::string_view path);
bool admin_token_valid(const http::Request& req, const GateConfig& cfg);

void add_cors(http::Response& res, const core::Caller& caller);
// 204 for OPTIONS, with the CORS headers when the caller gets them.
http::Response preflight(const Admission& a, bool admin_path);

}  // namespace leuria::web
