#include "adapters/web/gate.hpp"

#include "adapters/web/codec.hpp"
#include "core/host.hpp"
#include "core/random.hpp"

namespace leuria::web {

bool host_names_engine(const http::Request& req, std::uint16_t port) {
  auto host = req.header("host");
  return req.header_count("host") == 1 && host && core::host_allowed(*host, port) &&
         (req.target.starts_with("/") || (req.method == "OPTIONS" && req.target == "*"));
}

bool is_admin_path(std::string_view path) { return path == "/admin" || path.starts_with("/admin/"); }

bool admin_token_valid(const http::Request& req, const GateConfig& cfg) {
  if (cfg.admin_token.empty()) return false;
  return core::constant_time_equal(req.bearer(), cfg.admin_token);
}

Admission admit(const http::Request& req, const GateConfig& cfg,
                const std::function<bool(const std::string&)>& known_origin) {
  Admission a;
  // Classified first so that every refusal's log line says who was refused.
  // A browser sends one Sec-Fetch-Site; several are nobody's word for "local".
  auto fetch_site = req.header_count("sec-fetch-site") > 1 ? std::optional<std::string_view>("cross-site")
                                                           : req.header("sec-fetch-site");
  a.caller = req.header_count("origin") > 1 ? core::Caller{core::CallerKind::bad_origin, {}, {}}
                                            : core::classify_caller(req.header("origin"), cfg.port, fetch_site);

  if (!host_names_engine(req, cfg.port)) {
    // A page whose own name was rebound to 127.0.0.1 reads its same-origin answers, and this one would
    // tell it Leuria is installed. Its GET carries neither an Origin nor, from an http: page, any
    // Sec-Fetch-* header, so it can't be told from a local process: in app mode every wrong Host gets
    // silence (the log says why; no local program needs a wrong Host).
    if (cfg.silence) {
      a.refusal = silent_response();
      a.silenced = true;
      return a;
    }
    a.refusal = error_response(403, "host not allowed");
    return a;
  }

  if (a.caller.kind == core::CallerKind::desktop) {
    // The admin token makes the app's webview the app. Its preflights carry no token, so they get CORS
    // on the admin paths; without the token nothing else does, or any page served as tauri.localhost
    // would read the admin API's 401 and learn that Leuria is there.
    if (cfg.admin_api && (admin_token_valid(req, cfg) || (req.method == "OPTIONS" && is_admin_path(req.path)))) {
      a.cors = true;
      return a;
    }
    // Without the admin token a tauri.localhost page is just a web page; tauri:// is nothing.
    a.caller.kind = a.caller.origin.starts_with("http") ? core::CallerKind::web : core::CallerKind::bad_origin;
  }
  switch (a.caller.kind) {
    case core::CallerKind::bad_origin:
      a.refusal = error_response(403, "origin not allowed");
      return a;
    case core::CallerKind::web:
      // A page that didn't say which is never known: silence in app mode, and no CORS to echo.
      if (cfg.silence && (a.caller.origin.empty() || !known_origin(a.caller.origin))) {
        a.refusal = silent_response();
        a.silenced = true;
        return a;
      }
      a.cors = !a.caller.raw_origin.empty();
      return a;
    case core::CallerKind::own_page:
      a.cors = true;
      return a;
    default:
      return a;
  }
}

bool is_json_content_type(const http::Request& req) {
  if (req.header_count("content-type") != 1) return false;
  std::string_view v = *req.header("content-type");
  v = v.substr(0, v.find(';'));  // parameters (charset) are fine
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.remove_suffix(1);
  while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
  return http::iequals(v, "application/json");
}

std::optional<http::Response> require_json_body(const http::Request& req, const core::Caller& caller) {
  if (caller.kind != core::CallerKind::web || req.method != "POST" || is_json_content_type(req)) return std::nullopt;
  return error_response(415, "Content-Type must be application/json");
}

void add_cors(http::Response& res, const core::Caller& caller) {
  res.set("Access-Control-Allow-Origin", caller.raw_origin);
  res.set("Vary", "Origin");
  res.set("Access-Control-Allow-Private-Network", "true");
}

http::Response preflight(const Admission& a, bool admin_path) {
  http::Response r;
  r.status = 204;
  if (a.cors) {
    add_cors(r, a.caller);
    r.set("Access-Control-Allow-Methods", admin_path ? "GET, POST, DELETE, OPTIONS" : "GET, POST, OPTIONS");
    r.set("Access-Control-Allow-Headers", "Content-Type, Authorization");
    r.set("Access-Control-Max-Age", "600");
  }
  return r;
}

}  // namespace leuria::web
