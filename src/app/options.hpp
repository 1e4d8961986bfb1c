// The command line (CLI11): `leuria [start]`, `leuria sites`, `leuria sites revoke <origin>`.
// Words and flags are the original engine's, so scripts and docs written for it keep working.
#pragma once
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "core/embeddings.hpp"
#include "core/pairing.hpp"

namespace leuria::app {

struct StartOptions {
  std::optional<int> port;
  bool app = false;
  bool dev_pairing = false;
  bool no_open = false;
  bool verbose = false;
  std::optional<std::string> agent;  // --agent: set (and save) the visitor's default AI
};

struct SitesList {};
struct SitesRevoke {
  std::string origin;
};
struct SitesUse {
  std::string origin;
  std::string agent;  // an AI id, or "default"
  std::optional<std::string> model;
};
struct AgentsList {};
struct AgentsAdd {
  std::string id;
  std::string command;
  std::vector<std::string> args;
};
struct AgentsRemove {
  std::string id;
};
struct AgentsUse {  // `leuria agents use`: the default AI, changed without (re)starting the engine
  std::string id;
  std::optional<std::string> model;
};
struct McpStdio {
  std::string url;
};
struct ProvidersList {};
struct ProvidersAdd {
  std::string id;
  std::string url;
  std::optional<std::string> key;
};
struct ProvidersRemove {
  std::string id;
};
struct EmbedShow {};
struct EmbedSet {
  core::EmbedChoice choice;  // use <provider> <model>, off, auto
};
using Command = std::variant<StartOptions, SitesList, SitesRevoke, SitesUse, AgentsList, AgentsAdd, AgentsRemove,
                             AgentsUse, ProvidersList, ProvidersAdd, ProvidersRemove, McpStdio, EmbedShow, EmbedSet>;

// Parses argv. On --help/--version (exit 0) or a usage error (one sentence on stderr, exit 2),
// returns the exit code instead of a command.
std::variant<Command, int> parse_command_line(int argc, char** argv);

// Timings that tests shorten through LEURIA_TEST_TIMINGS ("claimWaitMs=300,expiryMs=2000,…").
// Read only for that purpose; the engine logs a warning when it is set.
struct Timings {
  core::PairingTimings pairing;
  std::chrono::milliseconds last_used{60'000};
  std::chrono::milliseconds session_start{60'000};
  std::chrono::milliseconds session_retention{300'000};
  std::chrono::milliseconds session_unused{600'000};  // a live session no page uses ends (0: never)
  std::chrono::milliseconds kill_grace{3'000};
  std::chrono::milliseconds cancel_grace{10'000};  // a cancelled turn's agent must answer within this
  std::chrono::milliseconds model_stall{300'000};  // a model server's silence mid-answer
  std::chrono::milliseconds ping{15'000};
  std::chrono::milliseconds tool_call{600'000};
  std::chrono::milliseconds mcp_keep_alive{20'000};  // a waiting MCP answer's keep-alive (a gone client shows there)
  std::chrono::milliseconds embed_cache{10'000};  // how long a discovery of embedding models holds
  // The HTTP server's (http::ServerLimits); unset keeps its defaults.
  std::optional<std::chrono::milliseconds> header_timeout;
  std::optional<std::chrono::milliseconds> idle_timeout;
  std::optional<std::chrono::milliseconds> body_timeout;
  std::optional<std::chrono::milliseconds> write_timeout;
  std::optional<std::size_t> max_connections;
};
// The error is a plain sentence.
std::variant<Timings, std::string> timings_from_env();

}  // namespace leuria::app
