// The mcp_server door: POST /webmcp/mcp, MCP over streamable HTTP for the AI (bearer = the
// session's channel token). A call that waits on the page keeps its response alive: as SSE with
// comment lines when the client accepts text/event-stream (every agent we run does), else as JSON
// preceded by blank lines. GET opens a stream for notifications/tools/list_changed.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <string>

#include "adapters/mcp_server/codec.hpp"
#include "core/session_book.hpp"
#include "http/message.hpp"

namespace leuria::mcp_server {

class McpEndpoint {
 public:
  McpEndpoint(core::SessionBook& sessions, std::uint16_t port, std::string version,
              std::chrono::milliseconds keep_alive = std::chrono::seconds(20))
      : sessions_(sessions), port_(port), version_(std::move(version)), keep_alive_(keep_alive) {}

  static bool handles(std::string_view path) { return path == "/webmcp/mcp"; }
  boost::asio::awaitable<http::Response> handle(http::Request& req);
  // Asked after the Host check: true answers an empty 403 and nothing else (the desktop app's engine is
  // silent to pages it doesn't know, on every route; the wiring hands it the page gate's answer).
  void set_silence(std::function<bool(const http::Request&)> silent) { silent_ = std::move(silent); }

 private:
  http::Response post(http::Request& req, std::shared_ptr<core::Session> session);
  http::Response get(http::Request& req, std::shared_ptr<core::Session> session);
  // A call the page answers (`id_json`: the request's id as JSON text).
  http::Response call(http::Request& req, core::Session& session, core::PageCall::Kind kind, NamedCall call,
                      std::string id_json);

  core::SessionBook& sessions_;
  std::uint16_t port_;
  std::string version_;
  std::chrono::milliseconds keep_alive_;
  std::function<bool(const http::Request&)> silent_;
};

}  // namespace leuria::mcp_server
