#include "support/world.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "adapters/web/session_codec.hpp"
#include "core/random.hpp"

namespace leuria::fuzz {

using namespace std::chrono_literals;

MemoryGrants::MemoryGrants() {
  core::Grant g;
  g.origin = kGoodOrigin;
  g.app = "Good app";
  g.token_hash = core::sha256_hex(kGoodToken);
  g.created_at = "2025-01-01T00:00:00Z";
  grants_.push_back(g);
}

core::Grant MemoryGrants::upsert(const core::Grant& grant) {
  for (auto& g : grants_)
    if (g.origin == grant.origin) {
      auto agent = g.agent;
      auto model = g.model;
      g = grant;
      g.agent = agent;
      g.model = model;
      return g;
    }
  grants_.push_back(grant);
  return grant;
}

bool MemoryGrants::remove(const std::string& origin) {
  return std::erase_if(grants_, [&](const core::Grant& g) { return g.origin == origin; }) > 0;
}

namespace {

class EchoBackend final : public core::AgentBackend {
 public:
  explicit EchoBackend(core::BackendSink& sink) : sink_(sink) {}
  asio::awaitable<boost::system::result<void, std::string>> start(core::BackendConfig) override {
    co_return boost::system::result<void, std::string>{};
  }
  bool accepts_images() const override { return true; }
  asio::awaitable<core::TurnOutcome> prompt(std::vector<core::PromptBlock> blocks) override {
    if (!shut_ && !blocks.empty()) sink_.on_chunk(blocks.front().text);
    co_return core::TurnOutcome{};
  }
  void cancel_turn() override {}
  void shutdown() override { shut_ = true; }

 private:
  core::BackendSink& sink_;
  bool shut_ = false;
};

}  // namespace

boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> EchoFactory::make(
    const core::AiChoice& ai, core::BackendSink& sink, std::shared_ptr<core::ToolRegistry>) {
  if (ai.agent == "missing") return std::string("The AI 'missing' isn't set up");
  return std::shared_ptr<core::AgentBackend>(std::make_shared<EchoBackend>(sink));
}

asio::awaitable<std::optional<core::EmbedModel>> InstantEmbedder::current(std::chrono::milliseconds) {
  co_return core::EmbedModel{"ollama", "Ollama", "nomic-embed-text"};
}

asio::awaitable<boost::system::result<core::Embedding, core::EmbedFailure>> InstantEmbedder::embed(
    std::vector<std::string> texts, core::EmbedKind) {
  core::Embedding e{"nomic-embed-text", {}};
  for (auto& t : texts) e.vectors.push_back({static_cast<double>(t.size()), 0.5});
  co_return e;
}

asio::awaitable<std::optional<std::string>> ScriptedSocket::read() {
  if (on_first_read) {
    auto first = std::move(on_first_read);
    on_first_read = nullptr;
    first();
  }
  co_await asio::post(co_await asio::this_coro::executor, asio::use_awaitable);
  if (closed || incoming_.empty()) co_return std::nullopt;
  std::string next = std::move(incoming_.front());
  incoming_.pop_front();
  if (transform) next = transform(std::move(next));
  co_return next;
}

asio::awaitable<bool> ScriptedSocket::write(std::string text) {
  if (closed) co_return false;
  written.push_back(std::move(text));
  co_return true;
}

asio::awaitable<void> ScriptedSocket::close() {
  closed = true;
  co_return;
}

asio::awaitable<bool> CollectingWriter::write(std::string data) {
  body += data;
  ++writes;
  co_return writes < 64;  // a stream that never ends (keep-alives) is cut here, as a client leaving
}

void AnsweringPage::send_call(const core::PageCall& call) {
  // Answered from the io_context, as a page's toolResponse would be: never inside send_call.
  asio::post(ex_, [tools = tools_, id = call.id] {
    if (auto t = tools.lock()) t->answer(id, core::PageAnswer{core::PageAnswer::Status::answered, "ok", R"({"ok":true})"});
  });
}

void drain(asio::io_context& ioc) {
  ioc.restart();
  while (ioc.poll() > 0) {
  }
}

bool settle(asio::io_context& ioc, const bool& done) {
  ioc.restart();
  while (!done) {
    if (ioc.poll() > 0) continue;
    ioc.restart();
    // Nothing ready: a timer is pending. The short ones (claims, keep-alives) fire within this.
    if (ioc.run_one_for(2s) == 0) break;
  }
  return done;
}

bool run(asio::io_context& ioc, asio::awaitable<void> task) {
  std::exception_ptr error;
  bool done = false;
  asio::co_spawn(ioc, std::move(task), [&](std::exception_ptr e) {
    error = e;
    done = true;
  });
  settle(ioc, done);
  if (error) std::rethrow_exception(error);
  return done;
}

namespace {

core::PairingTimings quick_pairing() {
  core::PairingTimings t;
  t.claim_wait = 1ms;  // a claim's long poll ends at once
  return t;
}

core::SessionLimits session_limits() {
  core::SessionLimits l;
  l.tool_call_timeout = 50ms;
  return l;
}

bool quiet_logs() {
  spdlog::set_level(spdlog::level::off);
  return true;
}

}  // namespace

World::World(bool app)
    : app_mode(app),
      grants((quiet_logs(), repo), 60s),
      pairing(ioc.get_executor(), grants, app ? core::PairingMode::link_asks : core::PairingMode::claim_asks,
              quick_pairing(), observer),
      sessions(ioc.get_executor(), factory, session_limits(),
               "http://127.0.0.1:" + std::to_string(kPort) + "/webmcp/mcp"),
      api(web::WebContext{grants, pairing, sessions, embedder,
                          web::GateConfig{kPort, app, app, app ? kAdminToken : ""},
                          web::EngineInfo{"fuzz", app, core::AiChoice{"echo", {}}, {{"echo", "Echo"}}, 5ms}}),
      mcp(sessions, kPort, "fuzz", 1ms) {
  if (app) mcp.set_silence([this](const http::Request& r) { return api.silences(r); });  // as app/engine.cpp wires it
  auto good = sessions.prepare(kGoodOrigin, core::AiChoice{"echo", {}}, {});
  auto local = sessions.prepare("", core::AiChoice{"echo", {}}, {});
  if (!good || !local) fail("the world's sessions");
  good_session = *good;
  local_session = *local;
  if (!good_session->approve()) fail("approving the world's session");
  drain(ioc);  // the AI starts
}

World::~World() {
  sessions.end_all();
  drain(ioc);
}

asio::awaitable<http::Response> World::handle(http::Request& req) {
  if (mcp_server::McpEndpoint::handles(req.path)) return mcp.handle(req);
  return api.handle(req);
}

bool World::known(const std::string& origin) const {
  return grants.has_grant(origin) || pairing.has_open_request(origin);
}

void replace_all(std::string& text, std::string_view what, const std::string& with) {
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + with.size()))
    text.replace(at, what.size(), with);
}

std::string World::substitute(std::string text) const {
  if (text.find('{') == std::string::npos) return text;
  auto& tools = good_session->page_tools();
  replace_all(text, "{sid}", good_session->id());
  replace_all(text, "{lsid}", local_session->id());
  replace_all(text, "{chid}", tools.channel_id());
  replace_all(text, "{chtok}", tools.channel_token());
  replace_all(text, "{regtok}", web::registration_token(kPort, good_session->registration_secret()));
  replace_all(text, "{secret}", good_session->registration_secret());
  return text;
}

std::deque<std::string> split_lines(const std::string& text, std::size_t max) {
  std::deque<std::string> out;
  for (std::size_t start = 0; start <= text.size() && out.size() < max;) {
    auto nl = text.find('\n', start);
    if (nl == std::string::npos) nl = text.size();
    out.push_back(text.substr(start, nl - start));
    start = nl + 1;
  }
  return out;
}

http::Request make_request(std::string method, std::string target, std::vector<http::Header> headers,
                           std::string body) {
  http::Request r;
  r.method = std::move(method);
  r.target = std::move(target);
  auto q = r.target.find('?');
  r.path = r.target.substr(0, q);
  if (q != std::string::npos) r.query = r.target.substr(q + 1);
  r.headers = std::move(headers);
  r.body = std::move(body);
  return r;
}

}  // namespace leuria::fuzz
