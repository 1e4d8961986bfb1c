// /admin/*: the desktop app's API (app mode only): pairing links and answers, revoking sites.
#include <boost/json.hpp>
#include <spdlog/spdlog.h>

#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"
#include "core/origin.hpp"

namespace leuria::web {

namespace json = boost::json;

http::Response admin(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  if (caller.kind != core::CallerKind::local && caller.kind != core::CallerKind::desktop)
    return not_allowed_for_caller();
  if (!admin_token_valid(req, ctx.gate)) return error_response(401, "Unauthorized");

  const std::string& p = req.path;
  if (p == "/admin/pairing/link" && req.method == "POST") {
    auto body = parse_body(req, kSmallBody);
    if (!body) return body.error();
    LinkBody link = parse_link(*body);
    auto origin = link.origin ? core::normalize_web_origin(*link.origin) : std::nullopt;
    if (!origin) return error_response(400, "origin must be an http: or https: origin");
    auto id = ctx.pairing.link(*origin, link.rest.nonce, link.rest.app, link.rest.needs);
    if (!id) return pairing_error(id.error());
    json::object o;
    o["requestId"] = *id;
    return json_response(201, o);
  }
  if (p == "/admin/pairing" && req.method == "GET") {
    json::array list;
    for (auto& r : ctx.pairing.pending()) list.push_back(encode_request(r));
    json::object o;
    o["requests"] = std::move(list);
    return json_response(200, o);
  }
  constexpr std::string_view kPairing = "/admin/pairing/";
  if (p.starts_with(kPairing) && p.size() > kPairing.size() && req.method == "POST" &&
      p.find('/', kPairing.size()) == std::string::npos) {
    auto body = parse_body(req, kSmallBody);
    if (!body) return body.error();
    auto allow = parse_allow(*body);
    if (!allow) return error_response(400, "allow must be true or false");
    auto decided = ctx.pairing.decide(p.substr(kPairing.size()), *allow);
    if (!decided) {
      if (decided.error() == core::PairingError::not_saved)
        spdlog::error("event=grant.save_failed by=admin error=\"{}\"", ctx.grants.last_save_error());
      return pairing_error(decided.error());
    }
    if (*allow) spdlog::info("event=grant.saved origin={} by=admin", decided->origin);
    json::object o;
    o["ok"] = true;
    return json_response(200, o);
  }
  if (p == "/admin/sites" && req.method == "DELETE") {
    auto raw = http::query_param(req.query, "origin");
    auto origin = raw ? core::normalize_web_origin(*raw) : std::nullopt;
    if (!origin) return error_response(400, "origin must be an http: or https: origin");
    auto removed = ctx.grants.revoke(*origin);
    if (!removed) {
      // Nothing is acknowledged that isn't on disk: the site stays connected, and the app says so.
      spdlog::error("event=grant.save_failed origin={} by=admin error=\"{}\"", *origin, removed.error());
      return error_response(503,
                            "Leuria could not save the change to disk, so the site is still connected. Check that "
                            "the disk has free space, then try again.",
                            "not_saved");
    }
    if (*removed) spdlog::info("event=grant.revoked origin={} by=admin", *origin);
    json::object o;
    o["removed"] = *removed;
    return json_response(200, o);
  }
  return error_response(404, "Not found");
}

}  // namespace leuria::web
