// Route handlers of the web door (internal to adapters/web). Each takes an admitted caller.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <string>

#include "adapters/web/router.hpp"

namespace leuria::web {

http::Response not_allowed_for_caller();

// Sessions belong to the caller's origin; local processes own the sessions they make ("").
std::string session_owner(const core::Caller& caller);

boost::asio::awaitable<http::Response> health(WebContext& ctx, const http::Request& req, const core::Caller& caller);
boost::asio::awaitable<http::Response> embed(WebContext& ctx, const http::Request& req, const core::Caller& caller);

boost::asio::awaitable<http::Response> connect_claim(WebContext& ctx, const http::Request& req,
                                                     const core::Caller& caller);
http::Response connect_page(WebContext& ctx, const std::string& id, const core::Caller& caller);
http::Response connect_state(WebContext& ctx, const std::string& id, const core::Caller& caller);
http::Response connect_decide(WebContext& ctx, const http::Request& req, const std::string& id,
                              const core::Caller& caller);
http::Response connect_asset(WebContext& ctx, const std::string& name, const core::Caller& caller);

http::Response session_prepare(WebContext& ctx, const http::Request& req, const core::Caller& caller);
http::Response session_get(WebContext& ctx, const std::string& id, const core::Caller& caller);
http::Response session_action(WebContext& ctx, const http::Request& req, const std::string& id,
                              const std::string& action, const core::Caller& caller);
http::Response session_stream(WebContext& ctx, const std::string& id, const core::Caller& caller);

http::Response webmcp_register(WebContext& ctx, const http::Request& req, const core::Caller& caller);
http::Response webmcp_channel(WebContext& ctx, const http::Request& req, const std::string& channel_id,
                              const core::Caller& caller);

http::Response admin(WebContext& ctx, const http::Request& req, const core::Caller& caller);

}  // namespace leuria::web
