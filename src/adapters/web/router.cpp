#include "adapters/web/router.hpp"

#include <spdlog/spdlog.h>

#include <vector>

#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"

namespace leuria::web {

namespace asio = boost::asio;

namespace {

std::vector<std::string> segments(std::string_view path) {
  std::vector<std::string> out;
  while (!path.empty()) {
    if (path.front() == '/') {
      path.remove_prefix(1);
      continue;
    }
    auto slash = path.find('/');
    out.emplace_back(path.substr(0, slash));
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash);
  }
  return out;
}

http::Response not_paired() { return error_response(401, "This site is not connected to Leuria", "not_paired"); }

// For -v logs: who a request was answered as (a web page without Origin is "web" too).
std::string_view caller_word(core::CallerKind k) {
  switch (k) {
    case core::CallerKind::local: return "local";
    case core::CallerKind::own_page: return "own_page";
    case core::CallerKind::desktop: return "desktop";
    case core::CallerKind::web: return "web";
    case core::CallerKind::bad_origin: return "bad_origin";
  }
  return "unknown";
}

}  // namespace

void WebApi::set_ai(core::AiChoice default_ai, std::map<std::string, std::string> names) {
  ctx_.info.default_ai = std::move(default_ai);
  ctx_.info.agent_names = std::move(names);
}

bool WebApi::silences(const http::Request& req) const {
  if (!ctx_.gate.silence) return false;
  if (!host_names_engine(req, ctx_.gate.port)) return true;  // a rebound page's request may look local
  // The agent's own calls (no Origin, no Sec-Fetch-Site) are a local process's: never silenced, no admission built.
  if (!req.header("origin") && !req.header("sec-fetch-site")) return false;
  return admit(req, ctx_.gate, [this](const std::string& origin) { return known(origin); }).silenced;
}

bool WebApi::known(const std::string& origin) const {
  return ctx_.grants.has_grant(origin) || ctx_.pairing.has_open_request(origin);
}

asio::awaitable<http::Response> WebApi::handle(http::Request& req) {
  Admission a = admit(req, ctx_.gate, [this](const std::string& origin) { return known(origin); });
  if (a.refusal) {
    spdlog::debug("event=http.gate method={} path={} caller={} status={} host_ok={}", req.method, req.path,
                  caller_word(a.caller.kind), a.refusal->status, host_names_engine(req, ctx_.gate.port));
    co_return std::move(*a.refusal);
  }
  if (req.method == "OPTIONS") {
    spdlog::debug("event=http.preflight path={} origin={}", req.path, a.caller.origin);
    co_return preflight(a, ctx_.gate.admin_api && is_admin_path(req.path));
  }
  if (req.refused) {
    // The server refused the body (too large) before reading it; the gate still decides who may
    // read that answer.
    http::Response res = error_response(req.refused, "Request body too large");
    res.close = true;
    if (a.cors) add_cors(res, a.caller);
    co_return res;
  }
  // Before any route: no state change is reachable with a body a page could send unasked.
  if (auto refused = require_json_body(req, a.caller)) {
    spdlog::debug("event=http.request method={} path={} caller={} status=415", req.method, req.path,
                  caller_word(a.caller.kind));
    if (a.cors) add_cors(*refused, a.caller);
    co_return std::move(*refused);
  }

  http::Response res;
  try {
    res = co_await route(req, a.caller);
  } catch (const std::exception& e) {
    spdlog::error("event=http.error method={} path={} error=\"{}\"", req.method, req.path, e.what());
    res = error_response(500, "Unexpected engine error");
  }
  if (a.cors) add_cors(res, a.caller);
  spdlog::debug("event=http.request method={} path={} caller={} status={}", req.method, req.path,
                caller_word(a.caller.kind), res.status);
  co_return res;
}

asio::awaitable<http::Response> WebApi::route(http::Request& req, const core::Caller& caller) {
  const auto seg = segments(req.path);
  const bool get = req.method == "GET";
  const bool post = req.method == "POST";

  if (seg.size() == 1 && seg[0] == "health" && get) co_return co_await health(ctx_, req, caller);

  if (!seg.empty() && seg[0] == "connect") {
    if (seg.size() == 2 && seg[1] == "claim" && post) co_return co_await connect_claim(ctx_, req, caller);
    if (seg.size() == 3 && seg[1] == "assets" && get) co_return connect_asset(ctx_, seg[2], caller);
    if (seg.size() == 2 && get) co_return connect_page(ctx_, seg[1], caller);
    if (seg.size() == 3 && seg[2] == "state" && get) co_return connect_state(ctx_, seg[1], caller);
    if (seg.size() == 3 && seg[2] == "decide" && post) co_return connect_decide(ctx_, req, seg[1], caller);
  }

  if (!seg.empty() && seg[0] == "admin" && ctx_.gate.admin_api) co_return admin(ctx_, req, caller);

  if (seg.size() == 2 && seg[0] == "webmcp" && seg[1] == "register" && get) co_return webmcp_register(ctx_, req, caller);
  if (seg.size() == 3 && seg[0] == "webmcp" && seg[1] == "channel" && get)
    co_return webmcp_channel(ctx_, req, seg[2], caller);

  // The engine's own page may use nothing else.
  if (caller.kind == core::CallerKind::own_page) co_return not_allowed_for_caller();

  if (seg.size() == 1 && seg[0] == "embed" && post) {
    if (caller.kind == core::CallerKind::web && !ctx_.grants.token_valid(caller.origin, req.bearer()))
      co_return not_paired();
    co_return co_await embed(ctx_, req, caller);
  }

  if (!seg.empty() && seg[0] == "session") {
    const bool known = (seg.size() == 2 && seg[1] == "prepare" && post) || (seg.size() == 2 && get) ||
                       (seg.size() == 3 && seg[2] == "stream" && get) || (seg.size() == 3 && post);
    // Routes that exist need a grant from a web page.
    if (known && caller.kind == core::CallerKind::web && !ctx_.grants.token_valid(caller.origin, req.bearer()))
      co_return not_paired();
    if (seg.size() == 2 && seg[1] == "prepare" && post) co_return session_prepare(ctx_, req, caller);
    if (seg.size() == 2 && get) co_return session_get(ctx_, seg[1], caller);
    if (seg.size() == 3 && seg[2] == "stream" && get) co_return session_stream(ctx_, seg[1], caller);
    if (seg.size() == 3 && post) co_return session_action(ctx_, req, seg[1], seg[2], caller);
  }
  co_return error_response(404, "Not found");
}

}  // namespace leuria::web
