// The engine's web and MCP doors with everything behind them faked in memory, for fuzz targets:
// grants in a vector (no disk), an AI that echoes, an embedder that answers at once, no sockets.
// One World per input, so every run starts from the same state; coroutines run on the World's own
// io_context until the awaited one finishes.
#pragma once
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "adapters/mcp_server/endpoint.hpp"
#include "adapters/web/router.hpp"
#include "core/pairing.hpp"
#include "core/session_book.hpp"
#include "http/message.hpp"

namespace leuria::fuzz {

namespace asio = boost::asio;

inline constexpr std::uint16_t kPort = 5000;
inline constexpr const char* kGoodOrigin = "https://good.example";  // has a grant
inline constexpr const char* kGoodToken = "fuzz-good-token";        // its token
inline constexpr const char* kAdminToken = "fuzz-admin-token-0123456789";

// A broken invariant: say which, then abort so libFuzzer keeps the input as a crash.
[[noreturn]] inline void fail(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}
inline void check(bool ok, const char* what) {
  if (!ok) fail(what);
}

class MemoryGrants final : public core::GrantRepository {
 public:
  MemoryGrants();
  std::vector<core::Grant> load() override { return grants_; }
  core::Grant upsert(const core::Grant& grant) override;
  bool remove(const std::string& origin) override;
  void touch(const std::string&, const std::string&) override {}

 private:
  std::vector<core::Grant> grants_;
};

// An AI that starts at once and answers each prompt with its text.
class EchoFactory final : public core::BackendFactory {
 public:
  boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> make(
      const core::AiChoice& ai, core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools) override;
};

class InstantEmbedder final : public core::Embedder {
 public:
  asio::awaitable<std::optional<core::EmbedModel>> current(std::chrono::milliseconds) override;
  asio::awaitable<boost::system::result<core::Embedding, core::EmbedFailure>> embed(std::vector<std::string> texts,
                                                                                   core::EmbedKind) override;
};

class QuietObserver final : public core::PairingObserver {
 public:
  void on_request(const core::PairingView&) override {}
  void on_decided(const core::PairingView&, core::Decision) override {}
};

// A WebSocket whose peer sent `incoming` (then closed); what the engine writes is kept. Each read
// lets the io_context run first, as a real socket's would, so writes and calls interleave.
class ScriptedSocket final : public http::WebSocket {
 public:
  explicit ScriptedSocket(std::deque<std::string> incoming) : incoming_(std::move(incoming)) {}
  asio::awaitable<std::optional<std::string>> read() override;
  asio::awaitable<bool> write(std::string text) override;
  asio::awaitable<void> close() override;
  std::vector<std::string> written;
  bool closed = false;
  std::function<void()> on_first_read;                // once the engine is reading
  std::function<std::string(std::string)> transform;  // applied to each message as it is read

 private:
  std::deque<std::string> incoming_;
};

// A streamed body's chunks, concatenated.
class CollectingWriter final : public http::BodyWriter {
 public:
  asio::awaitable<bool> write(std::string data) override;
  std::string body;
  std::size_t writes = 0;
};

// A page on the tool channel that answers every call at once with `{"ok":true}`.
class AnsweringPage final : public core::PageLink {
 public:
  AnsweringPage(asio::any_io_executor ex, std::weak_ptr<core::PageTools> tools) : ex_(ex), tools_(tools) {}
  void send_call(const core::PageCall& call) override;
  void close() override {}

 private:
  asio::any_io_executor ex_;
  std::weak_ptr<core::PageTools> tools_;
};

// Runs what is ready on the io_context, and what that makes ready, without waiting for timers.
void drain(asio::io_context& ioc);

// Runs the io_context until `done`, or until nothing happens for a while (a coroutine that waits
// on a long timer): then false.
bool settle(asio::io_context& ioc, const bool& done);

// Runs `task` to its end on `ioc`. An exception it throws is rethrown here (libFuzzer reports it:
// nothing the engine decodes may throw past its door). nullopt when it never finished.
template <class T>
std::optional<T> run(asio::io_context& ioc, asio::awaitable<T> task) {
  std::optional<T> out;
  std::exception_ptr error;
  bool done = false;
  asio::co_spawn(ioc, std::move(task), [&](std::exception_ptr e, T value) {
    error = e;
    if (!e) out.emplace(std::move(value));
    done = true;
  });
  settle(ioc, done);
  if (error) std::rethrow_exception(error);
  return out;
}
bool run(asio::io_context& ioc, asio::awaitable<void> task);

struct World {
  // app_mode: the desktop app's engine (silence, the admin API, link-asks pairing); else the CLI's.
  explicit World(bool app_mode);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  // The engine's handler: /webmcp/mcp to the MCP door, everything else to the web door (app/engine.cpp).
  asio::awaitable<http::Response> handle(http::Request& req);
  // Whether the gate would treat this origin as known (a grant or an open pairing question).
  bool known(const std::string& origin) const;
  // Replaces {sid} {lsid} {chid} {chtok} {regtok} {secret} with the live values of the two sessions
  // made at the start (one for kGoodOrigin, approved; one for local processes), so seeds can name them.
  std::string substitute(std::string text) const;

  bool app_mode;
  asio::io_context ioc;  // first: outlives everything that holds its timers
  MemoryGrants repo;
  EchoFactory factory;
  InstantEmbedder embedder;
  QuietObserver observer;
  core::GrantBook grants;
  core::PairingBook pairing;
  core::SessionBook sessions;
  web::WebApi api;
  mcp_server::McpEndpoint mcp;
  std::shared_ptr<core::Session> good_session;   // kGoodOrigin's, approved
  std::shared_ptr<core::Session> local_session;  // a local process's, not approved
};

void replace_all(std::string& text, std::string_view what, const std::string& with);

// The input's lines (LF-separated, at least one, at most `max`): one message each.
std::deque<std::string> split_lines(const std::string& text, std::size_t max);

// A request as http/server.cpp hands it over: path and query split from the target.
http::Request make_request(std::string method, std::string target, std::vector<http::Header> headers,
                           std::string body = {});

}  // namespace leuria::fuzz
