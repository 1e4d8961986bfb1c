#include "app/engine.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdio>
#include <cstdlib>
#include <filesystem>

extern char** environ;
#include <spdlog/spdlog.h>

#include "adapters/embed/local_embedder.hpp"
#include "adapters/mcp_server/endpoint.hpp"
#include "adapters/web/router.hpp"
#include "app/ai_commands.hpp"
#include "app/app_events.hpp"
#include "app/backends.hpp"
#include "app/logging.hpp"
#include "core/grants.hpp"
#include "core/pairing.hpp"
#include "core/session_book.hpp"
#include "http/server.hpp"
#include "store/config_file.hpp"
#include "store/engine_lock.hpp"
#include "store/grants_file.hpp"
#include "store/home_watch.hpp"
#include "store/home.hpp"
#include "transport/child_process.hpp"
#include "transport/listener.hpp"

namespace leuria::app {

namespace asio = boost::asio;

namespace {

constexpr int kDefaultPort = 19570;
constexpr std::size_t kMinAdminToken = 32;

// One plain sentence for the visitor on stderr, and for the desktop app as a JSON line.
int fail(bool app_mode, const std::string& message) {
  if (app_mode) write_json_line(error_line(message));
  std::fprintf(stderr, "leuria: %s\n", message.c_str());
  return 1;
}

// --port > LEURIA_PORT > config.json "port" > 19570.
std::variant<int, std::string> resolve_port(const StartOptions& o, const store::Config& config) {
  if (o.port) return *o.port;
  if (const char* env = std::getenv("LEURIA_PORT"); env && *env) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (*end != '\0' || v < 0 || v > 65535)
      return std::string("LEURIA_PORT must be a whole number from 0 to 65535, not '") + env + "'.";
    return static_cast<int>(v);
  }
  if (config.port) return *config.port;
  return kDefaultPort;
}

// The names pages and /health show for each AI: config.json's, else the catalog's.
std::map<std::string, std::string> ai_names(const store::Config& config, const core::AiCatalog& catalog) {
  std::map<std::string, std::string> names = config.agent_names;
  for (auto& a : catalog.agents) names.emplace(a.id, a.name);
  for (auto& p : catalog.providers) names.emplace("llm:" + p.id, p.name);
  return names;
}

core::AiChoice default_ai(const store::Config& config) {
  return core::AiChoice{config.agent.value_or(core::kDefaultAgent), config.model};
}

void log_spawn_error(std::exception_ptr e) {
  if (!e) return;
  try {
    std::rethrow_exception(e);
  } catch (const std::exception& ex) {
    spdlog::error("event=task.failed error=\"{}\"", ex.what());
  }
}

}  // namespace

int run_engine(const StartOptions& o) {
  const bool app_mode = o.app || o.dev_pairing;
  setup_logging(o.verbose);

  auto timings = timings_from_env();
  if (auto* err = std::get_if<std::string>(&timings)) return fail(app_mode, *err);
  const Timings t = std::get<Timings>(timings);
  if (std::getenv("LEURIA_TEST_TIMINGS")) spdlog::warn("event=config.test_timings note=\"test timings in force\"");

  std::string admin_token;
  if (app_mode) {
    const char* tok = std::getenv("LEURIA_ADMIN_TOKEN");
    admin_token = tok ? tok : "";
    if (admin_token.size() < kMinAdminToken)
      return fail(true, "App mode needs LEURIA_ADMIN_TOKEN set to a secret of at least 32 characters.");
  }

  const auto home = store::home_dir();
  if (auto ok = store::ensure_home(home); !ok) return fail(app_mode, ok.error());
  // Before anything writes to the home or listens: a second engine changes nothing and says so.
  auto engine_lock = store::EngineLock::take(home);
  if (!engine_lock) return fail(app_mode, engine_lock.error());
  if (o.agent) {
    if (auto ok = set_default_agent(*o.agent); !ok) return fail(app_mode, ok.error());
  }
  auto config = store::load_config(home);
  if (!config) return fail(app_mode, config.error());
  auto port_or = resolve_port(o, *config);
  if (auto* err = std::get_if<std::string>(&port_or)) return fail(app_mode, *err);

  auto catalog = load_catalog(home);
  if (!catalog) return fail(app_mode, catalog.error());

  // One thread runs every socket, pipe and timer, and nothing else touches the io_context (host names
  // are looked up by transport::Lookup, which answers through a descriptor): no locks, neither the
  // reactor's per-descriptor ones nor the scheduler's.
  asio::io_context ioc(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
  auto listening = transport::listen_loopback(ioc.get_executor(), static_cast<std::uint16_t>(std::get<int>(port_or)));
  if (!listening) return fail(app_mode, listening.error());
  asio::ip::tcp::acceptor acceptor = std::move(listening->acceptor);
  asio::ip::tcp::socket v6_guard = std::move(listening->v6_guard);  // held, never read: see transport::Loopback
  const std::uint16_t port = acceptor.local_endpoint().port();

  try {
    store::GrantsFile grants_file(home, [](const std::string& m) { spdlog::error("event=grants.corrupt msg=\"{}\"", m); });
    core::GrantBook grants(grants_file, t.last_used);

    std::error_code tmp_ec;
    acp_client::AcpOptions acp{LEURIA_VERSION, std::filesystem::read_symlink("/proc/self/exe", tmp_ec).string(),
                               std::filesystem::temp_directory_path(), acp_client::agent_environment(environ),
                               t.kill_grace, t.cancel_grace};
    embed::LocalEmbedder embedder(ioc.get_executor(), t.embed_cache);
    embedder.set_providers(catalog->providers);
    embedder.set_choice(config->embed);
    auto names = ai_names(*config, *catalog);
    Backends backends(ioc.get_executor(), std::move(*catalog), acp, t.model_stall);
    core::SessionLimits limits;
    limits.start_timeout = t.session_start;
    limits.retention = t.session_retention;
    limits.unused_timeout = t.session_unused;
    limits.tool_call_timeout = t.tool_call;
    core::SessionBook sessions(ioc.get_executor(), backends, limits, "http://127.0.0.1:" + std::to_string(port) + "/webmcp/mcp");

    // A revoked grant, a new token or a new AI for the site: its sessions end at once.
    grants.on_revoked([&sessions](const std::string& origin) {
      spdlog::info("event=grant.changed origin={}", origin);
      sessions.end_origin(origin);
    });

    PairingAnnouncer announcer(app_mode, port, !o.no_open);
    core::PairingBook pairing(ioc.get_executor(), grants,
                              app_mode ? core::PairingMode::link_asks : core::PairingMode::claim_asks, t.pairing,
                              announcer);

    const bool silence = o.app && !o.dev_pairing;  // the desktop app's engine: silent to pages it doesn't know
    web::WebContext ctx{grants, pairing, sessions, embedder, web::GateConfig{port, silence, app_mode, admin_token},
                        web::EngineInfo{LEURIA_VERSION, app_mode, default_ai(*config), names, t.ping}};
    web::WebApi api(std::move(ctx));

    // The visitor's files, changed by another leuria command or by hand, apply at once: grants
    // (revocations), and the AI settings for sessions started from now on and for embeddings.
    // A file that doesn't read keeps what we have and says why.
    auto reload_ai = [&] {
      auto config = store::load_config(home);
      if (!config) return spdlog::error("event=config.reload_failed error=\"{}\"", config.error());
      auto catalog = load_catalog(home);
      if (!catalog) return spdlog::error("event=config.reload_failed error=\"{}\"", catalog.error());
      embedder.set_providers(catalog->providers);
      embedder.set_choice(config->embed);
      api.set_ai(default_ai(*config), ai_names(*config, *catalog));
      backends.set_catalog(std::move(*catalog));
      spdlog::info("event=config.reloaded");
    };
    store::HomeWatch watch(ioc.get_executor(), home, [&grants, &reload_ai](std::string_view name) {
      if (name == "config.json" || name == "providers.json") return reload_ai();
      if (name != "grants.json") return;
      try {
        grants.reload();
      } catch (const std::exception& e) {
        // Keep the grants we have; the next change of the file tries again.
        spdlog::error("event=grants.reload_failed error=\"{}\"", e.what());
      }
    });
    watch.start();
    mcp_server::McpEndpoint mcp(sessions, port, LEURIA_VERSION, t.mcp_keep_alive);
    // App mode: the page gate's silence covers this door too (no lookup at all in CLI mode).
    if (silence) mcp.set_silence([&api](const http::Request& r) { return api.silences(r); });
    // Two doors on one listener: the AI's MCP endpoint, and everything else (the page protocol).
    http::Handler handler = [&api, &mcp](http::Request& r) {
      if (mcp_server::McpEndpoint::handles(r.path)) return mcp.handle(r);
      return api.handle(r);
    };

    http::ServerLimits server_limits;
    if (t.header_timeout) server_limits.header_timeout = *t.header_timeout;
    if (t.idle_timeout) server_limits.idle_timeout = *t.idle_timeout;
    if (t.body_timeout) server_limits.body_timeout = *t.body_timeout;
    if (t.write_timeout) server_limits.write_timeout = *t.write_timeout;
    if (t.max_connections) server_limits.connections = *t.max_connections;
    asio::co_spawn(ioc,
                   transport::accept_loop(acceptor, server_limits.connections,
                                          [&](asio::ip::tcp::socket s, transport::Slot slot) {
                                            asio::co_spawn(ioc,
                                                           http::serve_connection(std::move(s), handler, server_limits,
                                                                                  std::move(slot)),
                                                           log_spawn_error);
                                          }),
                   log_spawn_error);

    asio::signal_set signals(ioc, SIGINT, SIGTERM);
    asio::steady_timer grace(ioc);  // agents' last moment before the engine stops
    signals.async_wait([&](boost::system::error_code, int) {
      boost::system::error_code ignored;
      acceptor.close(ignored);
      // Agents get SIGTERM now (SIGKILL if they linger), and the pages of live sessions their last
      // event. With neither (no live session, and no child process: no agent still exiting) there is
      // nothing to wait for, and the engine stops at once, as a stopped nginx does: a wait here delays
      // whatever starts the engine again (bench scenario 10, docs/PERFORMANCE.md).
      const std::size_t live = sessions.end_all();
      const bool children = transport::has_child_processes();
      const auto wait = live > 0 || children ? std::chrono::milliseconds(200) : std::chrono::milliseconds(0);
      spdlog::info("event=engine.stopping live_sessions={} child_processes={} grace_ms={}", live, children,
                   wait.count());
      if (wait.count() == 0) return ioc.stop();
      grace.expires_after(wait);
      grace.async_wait([&ioc](boost::system::error_code) { ioc.stop(); });
    });

    const std::string url = "http://127.0.0.1:" + std::to_string(port);
    if (app_mode) {
      write_json_line(ready_line(port));
      std::fprintf(stderr, "Leuria engine listening on %s\n", url.c_str());
    } else {
      std::printf("Leuria engine listening on %s\n", url.c_str());
      std::fflush(stdout);
    }
    spdlog::info("event=engine.ready port={} mode={} home={}", port,
                 o.dev_pairing ? "dev-pairing" : (o.app ? "app" : "cli"), home.string());
    ioc.run();
  } catch (const std::exception& e) {
    return fail(app_mode, e.what());
  }
  return 0;
}

}  // namespace leuria::app
