// /connect/*: the page's claim, and the CLI engine's approval page with its decide/state calls.
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "adapters/web/approval_page.hpp"
#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"

namespace leuria::web {

namespace asio = boost::asio;

namespace {

// The approval page and its state are for the engine's own origin, and for the visitor's browser
// navigating to it (navigations and same-origin GETs carry no Origin).
bool is_visitor(const core::Caller& c) {
  return c.kind == core::CallerKind::own_page || c.kind == core::CallerKind::local;
}

// With the desktop app the visitor answers in the app (admin API); the CLI's approval page, its
// state and its decide don't exist.
bool page_exists(const WebContext& ctx) { return !ctx.info.approvals_in_app; }

http::Response html(unsigned status, std::string body) {
  http::Response r;
  r.status = status;
  r.set("Content-Type", "text/html; charset=utf-8");
  r.body = std::move(body);
  apply_page_headers(r);
  return r;
}

}  // namespace

asio::awaitable<http::Response> connect_claim(WebContext& ctx, const http::Request& req,
                                             const core::Caller& caller) {
  // A page that sent no Origin has nothing to pair.
  if (caller.kind != core::CallerKind::web || caller.origin.empty())
    co_return pairing_error(core::PairingError::not_web_origin);
  auto body = parse_body(req, kSmallBody);
  if (!body) co_return body.error();
  ClaimBody claim = parse_claim(*body);
  // Named, not a temporary in the co_await's arguments (GCC 12 coroutine rule).
  std::function<bool()> caller_gone = [&req] { return http::peer_gone(req); };
  auto answer = co_await ctx.pairing.claim(caller.origin, claim.nonce, claim.app, claim.needs, caller_gone);
  if (!answer) {
    if (answer.error() == core::PairingError::caller_gone)
      spdlog::info("event=pairing.claim_left origin={}", caller.origin);  // any answer stays for the next claim
    co_return pairing_error(answer.error());
  }
  if (answer->status == core::ClaimAnswer::Status::allowed)
    spdlog::info("event=pairing.collected origin={}", caller.origin);
  co_return json_response(200, encode_claim(*answer));
}

http::Response connect_page(WebContext& ctx, const std::string& id, const core::Caller& caller) {
  if (!page_exists(ctx)) return error_response(404, "Not found");
  if (!is_visitor(caller)) return not_allowed_for_caller();
  auto request = ctx.pairing.find(id);
  if (!request) return html(404, missing_request_html());
  return html(200, approval_html(id, *request, core::ai_display_name(ctx.info.default_ai, ctx.info.agent_names)));
}

http::Response connect_asset(WebContext& ctx, const std::string& name, const core::Caller& caller) {
  if (!page_exists(ctx)) return error_response(404, "Not found");
  if (!is_visitor(caller)) return not_allowed_for_caller();
  auto asset = page_asset(name);
  if (!asset) return error_response(404, "Not found");
  http::Response r;
  r.set("Content-Type", std::string(asset->content_type));
  r.body = std::string(asset->body);
  apply_page_headers(r);
  return r;
}

http::Response connect_state(WebContext& ctx, const std::string& id, const core::Caller& caller) {
  if (!page_exists(ctx)) return error_response(404, "Not found");
  if (!is_visitor(caller)) return not_allowed_for_caller();
  auto request = ctx.pairing.find(id);
  if (!request) return pairing_error(core::PairingError::unknown);
  return json_response(200, encode_request_state(*request));
}

http::Response connect_decide(WebContext& ctx, const http::Request& req, const std::string& id,
                              const core::Caller& caller) {
  if (!page_exists(ctx)) return error_response(404, "Not found");
  // Only a click on the engine's own page decides: its fetch carries the engine's Origin.
  if (caller.kind != core::CallerKind::own_page) return not_allowed_for_caller();
  auto body = parse_body(req, kSmallBody);
  if (!body) return body.error();
  auto allow = parse_allow(*body);
  if (!allow) return error_response(400, "allow must be true or false");
  auto decided = ctx.pairing.decide(id, *allow);
  if (!decided) {
    if (decided.error() == core::PairingError::not_saved)
      spdlog::error("event=grant.save_failed by=approval_page error=\"{}\"", ctx.grants.last_save_error());
    return pairing_error(decided.error());
  }
  if (*allow) spdlog::info("event=grant.saved origin={} by=approval_page", decided->origin);
  boost::json::object o;
  o["decision"] = *allow ? "allowed" : "denied";
  o["origin"] = decided->origin;
  return json_response(200, o);
}

}  // namespace leuria::web
