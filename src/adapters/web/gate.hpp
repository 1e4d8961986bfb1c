// The gate every request passes before routing: Host, caller by Origin (and Sec-Fetch-Site),
// silence, CORS, and JSON for a page's POSTs. Protocol, Conventions. Nothing here reads a body.
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
  bool silenced = false;  // the refusal is silence (app mode, a page it doesn't know)
};

// known_origin: true when the origin has a grant or an uncollected pairing request.
Admission admit(const http::Request& req, const GateConfig& cfg,
                const std::function<bool(const std::string&)>& known_origin);

// The Host names this engine, once, and the target is a path (DNS rebinding).
bool host_names_engine(const http::Request& req, std::uint16_t port);

bool is_admin_path(std::string_view path);
bool admin_token_valid(const http::Request& req, const GateConfig& cfg);

// One Content-Type header whose media type is application/json (parameters allowed).
bool is_json_content_type(const http::Request& req);
// A web page's POST must be JSON, so that every state change needs a CORS preflight: text/plain,
// form-urlencoded and multipart bodies are "simple" requests a page (or a plain <form>) sends
// without asking. Set: answer this 415 and nothing else.
std::optional<http::Response> require_json_body(const http::Request& req, const core::Caller& caller);

void add_cors(http::Response& res, const core::Caller& caller);
// 204 for OPTIONS, with the CORS headers when the caller gets them.
http::Response preflight(const Admission& a, bool admin_path);

}  // namespace leuria::web
