// /webmcp/register and /webmcp/channel/<id>: the page's WebSocket channel for its tools. Upgrades
// are refused with a plain HTTP answer before they complete: 403 for an origin without a grant,
// 401 for a wrong channel token.
#include <spdlog/spdlog.h>

#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"
#include "adapters/web/webmcp_channel.hpp"
#include "adapters/web/webmcp_codec.hpp"

namespace leuria::web {

namespace asio = boost::asio;

namespace {

// Browsers can't send headers on a WebSocket: a page's origin must have a grant.
std::optional<http::Response> refuse_origin(WebContext& ctx, const core::Caller& caller) {
  if (caller.kind == core::CallerKind::web && !ctx.grants.has_grant(caller.origin))
    return error_response(403, "This site is not connected to Leuria");
  if (caller.kind == core::CallerKind::own_page) return not_allowed_for_caller();
  return std::nullopt;
}

// Named coroutines, their arguments copied into their frames (GCC 12 and capturing lambda
// coroutines don't mix).
asio::awaitable<void> register_page(http::WebSocket& ws, WebContext& ctx, std::string origin) {
  auto text = co_await ws.read();
  if (!text) co_return;
  auto token = parse_register(*text);
  if (!token) {
    co_await ws.write(encode_error(token.error().message));
    co_return;
  }
  auto session = ctx.sessions.find_by_registration(*token);
  // The token is the proof, but only for the page that owns the session, and only once.
  if (!session || session->origin() != origin || !session->consume_registration(*token)) {
    co_await ws.write(encode_error("Invalid registration token"));
    co_return;
  }
  auto& tools = session->page_tools();
  spdlog::info("event=webmcp.registered session={}", session->id());
  co_await ws.write(encode_register_success("/webmcp/channel/" + tools.channel_id(), tools.channel_token()));
}

asio::awaitable<void> serve_channel(http::WebSocket& ws, std::shared_ptr<core::Session> session,
                                    std::chrono::milliseconds ping) {
  // The executor first, as a named value: GCC 12 mishandles class temporaries made by a co_await
  // inside a call's arguments.
  auto ex = co_await asio::this_coro::executor;
  auto link = std::make_shared<PageSocketLink>(ex, ping);
  co_await link->run(ws, std::move(session));
}

}  // namespace

http::Response webmcp_register(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  if (auto refused = refuse_origin(ctx, caller)) return *refused;
  if (!req.websocket) return error_response(400, "Expected a WebSocket upgrade");
  http::Response r;
  const std::string origin = session_owner(caller);
  r.upgrade = [&ctx, origin](http::WebSocket& ws) { return register_page(ws, ctx, origin); };
  return r;
}

http::Response webmcp_channel(WebContext& ctx, const http::Request& req, const std::string& channel_id,
                              const core::Caller& caller) {
  if (auto refused = refuse_origin(ctx, caller)) return *refused;
  auto session = ctx.sessions.find_by_channel(channel_id);
  const std::string token = http::query_param(req.query, "token").value_or("");
  const std::string origin = session_owner(caller);
  if (!session || session->origin() != origin || !session->page_tools().channel_token_valid(token))
    return error_response(401, "Invalid channel token");
  if (!req.websocket) return error_response(400, "Expected a WebSocket upgrade");
  http::Response r;
  const auto ping = ctx.info.ping_every;
  r.upgrade = [session, ping](http::WebSocket& ws) { return serve_channel(ws, session, ping); };
  return r;
}

}  // namespace leuria::web
