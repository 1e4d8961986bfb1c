// The web door: every HTTP request from pages, the engine's own page, the desktop app and local
// processes enters here, passes the gate, and is routed. One wrapper turns exceptions into 500.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <map>
#include <string>

#include "adapters/web/gate.hpp"
#include "core/ai_name.hpp"
#include "core/embeddings.hpp"
#include "core/grants.hpp"
#include "core/pairing.hpp"
#include "core/session_book.hpp"
#include "http/message.hpp"

namespace leuria::web {

struct EngineInfo {
  std::string version;
  bool approvals_in_app = false;
  core::AiChoice default_ai;
  std::map<std::string, std::string> agent_names;
  std::chrono::milliseconds ping_every{15'000};  // pings on the page's tool channel
};

struct WebContext {
  core::GrantBook& grants;
  core::PairingBook& pairing;
  core::SessionBook& sessions;
  core::Embedder& embedder;
  GateConfig gate;
  EngineInfo info;
};

class WebApi {
 public:
  explicit WebApi(WebContext ctx) : ctx_(std::move(ctx)) {}
  boost::asio::awaitable<http::Response> handle(http::Request& req);
  // Whether the gate answers this request with silence (app mode, a page it doesn't know): the other
  // doors on the listener ask it too, so that silence covers every route.
  bool silences(const http::Request& req) const;
  // The visitor changed their default AI or the AIs' names (config.json, providers.json).
  void set_ai(core::AiChoice default_ai, std::map<std::string, std::string> names);

 private:
  boost::asio::awaitable<http::Response> route(http::Request& req, const core::Caller& caller);
  bool known(const std::string& origin) const;  // a grant, or a question whose answer waits for it
  WebContext ctx_;
};

}  // namespace leuria::web
