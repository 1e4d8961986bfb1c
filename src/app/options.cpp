#include "app/options.hpp"

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdlib>
#include <iostream>

namespace leuria::app {

std::variant<Command, int> parse_command_line(int argc, char** argv) {
  CLI::App cli{
      "leuria: lets the web pages you approve use your own AI (an ACP agent such as Claude Code,\n"
      "or a local model) through an engine on this computer, listening on 127.0.0.1 only.",
      "leuria"};
  cli.set_version_flag("--version", "leuria " LEURIA_VERSION, "Print the version and exit");
  cli.footer(
      "Files live in LEURIA_HOME (default ~/.leuria): config.json, grants.json, providers.json.\n"
      "Port: --port, else LEURIA_PORT, else config.json \"port\", else 19570.\n"
      "App mode (--app) needs LEURIA_ADMIN_TOKEN (32+ characters) and writes JSON lines on stdout.\n");

  StartOptions start;
  int port = 0;
  auto add_start_flags = [&](CLI::App* app) {
    app->add_option("-p,--port", port, "Port to listen on (0 picks a free one)")
        ->type_name("PORT")
        ->check(CLI::Range(0, 65535).description(""));
    app->add_flag("--app", start.app, "Run as the desktop app's engine: silent to unknown sites, admin API on");
    app->add_flag("--dev-pairing", start.dev_pairing, "App mode without silence, for developing an app");
    app->add_flag("--no-open", start.no_open, "Don't open approval pages in the browser (only print them)");
    app->add_flag("-v,--verbose", start.verbose, "Log every request (to stderr)");
    app->add_option("--agent", start.agent, "Use this AI by default from now on (saved), e.g. gemini, llm:ollama/qwen3:8b")
        ->type_name("ID");
  };
  add_start_flags(&cli);
  auto* start_cmd = cli.add_subcommand("start", "Run the engine (what `leuria` alone does)");
  start_cmd->fallthrough();

  auto* sites = cli.add_subcommand("sites", "List the sites you connected (origin, app, created, last used)");
  std::string origin;
  auto* revoke = sites->add_subcommand("revoke", "Disconnect a site; a running engine stops answering its token at once");
  revoke->add_option("origin", origin, "The site's origin, e.g. https://example.com")->required();
  SitesUse use;
  auto* use_cmd = sites->add_subcommand("use", "Give a site its own AI (or 'default'); its live sessions end");
  use_cmd->add_option("origin", use.origin, "The site's origin")->required();
  use_cmd->add_option("agent", use.agent, "An AI id from 'leuria agents', or 'default'")->required();
  use_cmd->add_option("--model", use.model, "A model for that AI")->type_name("ID");

  auto* agents = cli.add_subcommand("agents", "List every AI (agents and model servers), with whether it is ready");
  AgentsAdd agent_add;
  auto* agents_add = agents->add_subcommand("add", "Add an ACP agent: leuria agents add <id> <command> [args…]");
  agents_add->add_option("id", agent_add.id, "A short id for it")->required();
  agents_add->add_option("command", agent_add.command, "The program to run (looked up on PATH)")->required();
  agents_add->prefix_command();  // everything after the command is its arguments, dashes and all
  AgentsRemove agent_remove;
  auto* agents_remove = agents->add_subcommand("remove", "Remove an agent you added");
  agents_remove->add_option("id", agent_remove.id)->required();
  AgentsUse agent_use;
  auto* agents_use = agents->add_subcommand(
      "use", "Make this AI your default (saved); a running engine gives it to the sessions started from now on");
  agents_use->add_option("id", agent_use.id, "An AI id from 'leuria agents', e.g. gemini, llm:ollama/qwen3:8b")->required();
  agents_use->add_option("--model", agent_use.model, "A model for that AI")->type_name("ID");

  auto* providers = cli.add_subcommand("providers", "List the model servers (OpenAI-compatible, LM Studio, Ollama)");
  ProvidersAdd provider_add;
  auto* providers_add = providers->add_subcommand("add", "Add an OpenAI-compatible server: leuria providers add <id> <url> [--key K]");
  providers_add->add_option("id", provider_add.id)->required();
  providers_add->add_option("url", provider_add.url, "Its base URL, e.g. http://127.0.0.1:8080/v1")->required();
  providers_add->add_option("--key", provider_add.key, "An API key (stored only in providers.json, 0600)")->type_name("K");
  ProvidersRemove provider_remove;
  auto* providers_remove = providers->add_subcommand("remove", "Remove a server you added");
  providers_remove->add_option("id", provider_remove.id)->required();
  auto* embed = cli.add_subcommand(
      "embed", "Show the local embedding models (LM Studio, Ollama) and the one pages get for POST /embed");
  EmbedSet embed_use{{core::EmbedChoice::Mode::chosen, "", ""}};
  auto* embed_use_cmd = embed->add_subcommand("use", "Give pages this embedding model: leuria embed use <provider> <model>");
  embed_use_cmd->add_option("provider", embed_use.choice.provider, "A local LM Studio or Ollama server's id, as 'leuria embed' lists it (lmstudio, ollama)")
      ->required();
  embed_use_cmd->add_option("model", embed_use.choice.model, "The model as 'leuria embed' lists it")->required();
  auto* embed_off = embed->add_subcommand("off", "Turn embeddings off: POST /embed answers 503 no_embedder");
  auto* embed_auto = embed->add_subcommand("auto", "Forget the choice: pages get the first embedding model found");
  McpStdio mcp_stdio;
  auto* mcp = cli.add_subcommand("mcp-stdio",
                                 "An MCP stdio server that forwards to a session's tools (for agents without HTTP MCP); "
                                 "the token comes in LEURIA_MCP_TOKEN");
  mcp->add_option("url", mcp_stdio.url, "The engine's MCP endpoint, e.g. http://127.0.0.1:19570/webmcp/mcp")->required();
  cli.require_subcommand(0, 1);

  try {
    cli.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return cli.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return cli.exit(e);
  } catch (const CLI::ParseError& e) {
    std::string what = e.what();
    while (!what.empty() && (what.back() == '\n' || what.back() == '.')) what.pop_back();
    std::cerr << "leuria: " << what << ". Run 'leuria --help' for the options.\n";
    return 2;
  }

  if (revoke->parsed()) return Command{SitesRevoke{origin}};
  if (use_cmd->parsed()) return Command{use};
  if (agents_add->parsed()) {
    agent_add.args = agents_add->remaining();
    return Command{agent_add};
  }
  if (agents_remove->parsed()) return Command{agent_remove};
  if (agents_use->parsed()) return Command{agent_use};
  if (agents->parsed()) return Command{AgentsList{}};
  if (providers_add->parsed()) return Command{provider_add};
  if (providers_remove->parsed()) return Command{provider_remove};
  if (providers->parsed()) return Command{ProvidersList{}};
  if (mcp->parsed()) return Command{mcp_stdio};
  if (embed_use_cmd->parsed()) return Command{embed_use};
  if (embed_off->parsed()) return Command{EmbedSet{{core::EmbedChoice::Mode::off, "", ""}}};
  if (embed_auto->parsed()) return Command{EmbedSet{}};
  if (embed->parsed()) return Command{EmbedShow{}};
  if (sites->parsed()) return Command{SitesList{}};
  if (cli.count("--port") > 0) start.port = port;
  return Command{start};
}

namespace {

bool parse_ms(std::string_view v, std::chrono::milliseconds& out) {
  long long n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc{} || end != v.data() + v.size() || n < 0) return false;
  out = std::chrono::milliseconds(n);
  return true;
}

}  // namespace

std::variant<Timings, std::string> timings_from_env() {
  Timings t;
  const char* env = std::getenv("LEURIA_TEST_TIMINGS");
  if (!env) return t;
  std::string_view rest(env);
  while (!rest.empty()) {
    auto comma = rest.find(',');
    auto item = rest.substr(0, comma);
    rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    if (item.empty()) continue;
    auto eq = item.find('=');
    auto key = item.substr(0, eq);
    auto value = eq == std::string_view::npos ? std::string_view{} : item.substr(eq + 1);
    std::chrono::milliseconds* slot = nullptr;
    if (key == "claimWaitMs") slot = &t.pairing.claim_wait;
    else if (key == "expiryMs") slot = &t.pairing.expiry;
    else if (key == "cooldownMs") slot = &t.pairing.cooldown;
    else if (key == "lastUsedMs") slot = &t.last_used;
    else if (key == "startTimeoutMs") slot = &t.session_start;
    else if (key == "retentionMs") slot = &t.session_retention;
    else if (key == "unusedMs") slot = &t.session_unused;
    else if (key == "killGraceMs") slot = &t.kill_grace;
    else if (key == "cancelGraceMs") slot = &t.cancel_grace;
    else if (key == "modelStallMs") slot = &t.model_stall;
    else if (key == "pingMs") slot = &t.ping;
    else if (key == "toolCallMs") slot = &t.tool_call;
    else if (key == "mcpKeepAliveMs") slot = &t.mcp_keep_alive;
    else if (key == "embedCacheMs") slot = &t.embed_cache;
    else if (key == "headerTimeoutMs") slot = &t.header_timeout.emplace();
    else if (key == "idleTimeoutMs") slot = &t.idle_timeout.emplace();
    else if (key == "bodyTimeoutMs") slot = &t.body_timeout.emplace();
    else if (key == "writeTimeoutMs") slot = &t.write_timeout.emplace();
    else if (key == "maxConnections") {
      std::chrono::milliseconds n{};  // a count, read with the same digits-only rule
      if (parse_ms(value, n) && n.count() > 0) {
        t.max_connections = static_cast<std::size_t>(n.count());
        continue;
      }
    }
    if (!slot || !parse_ms(value, *slot))
      return "LEURIA_TEST_TIMINGS has an unknown or malformed item '" + std::string(item) +
             "' (known: claimWaitMs, expiryMs, cooldownMs, lastUsedMs, startTimeoutMs, retentionMs, unusedMs, killGraceMs, cancelGraceMs, modelStallMs, pingMs, toolCallMs, mcpKeepAliveMs, embedCacheMs, headerTimeoutMs, idleTimeoutMs, bodyTimeoutMs, writeTimeoutMs, maxConnections).";
  }
  return t;
}

}  // namespace leuria::app
