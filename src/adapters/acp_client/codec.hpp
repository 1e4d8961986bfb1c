// The acp_client door's codec: ACP v1 as a client speaks it to an agent. The only file that knows
// ACP's field names (initialize, session/new with its MCP servers and Claude's _meta,
// session/prompt blocks, session/update kinds, session/request_permission).
#pragma once
#include <boost/json/value.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/backend.hpp"
#include "core/events.hpp"
#include "core/permission.hpp"
#include "json/string_slot.hpp"

namespace leuria::acp_client {

inline constexpr int kProtocolVersion = 1;

boost::json::value initialize_params(const std::string& version);

struct AgentInfo {
  int protocol_version = 0;
  bool images = false;
  bool http_mcp = false;
  std::optional<std::string> name;  // agentInfo.name, the agent's own word for what it is
};
std::optional<AgentInfo> parse_initialize(const boost::json::value& result);

struct NewSessionParams {
  std::string cwd;
  std::string mcp_url;    // empty: no MCP server
  std::string mcp_token;
  bool http_mcp = true;   // else the stdio bridge: `<engine> mcp-stdio <url>`
  std::string engine_path;
  // Claude Code: the system prompt goes in _meta (replacing its preset) and maxTurns in its options.
  // The options that turn its built-in tools and the user's settings off are sent to every agent (see
  // is_claude_code): a Claude we did not recognise must still be locked down.
  bool claude = false;
  std::optional<std::string> system_prompt;
  int max_turns = 0;      // > 0, with `claude`: its maxTurns option (the page's maxTurns; ACP has no field for it)
};
boost::json::value new_session_params(const NewSessionParams& p);

// Whether the agent is Claude Code's ACP adapter: by the name it gave in initialize's agentInfo
// ("@agentclientprotocol/claude-agent-acp", "@zed-industries/claude-code-acp") when it gave one, else
// by the configured id ("claude-acp") or the command's file name. Decides only where the system
// prompt goes, never whether the lockdown is sent.
bool is_claude_code(const std::optional<std::string>& reported_name, const std::string& agent_id,
                    const std::string& command);

struct NewSessionInfo {
  std::string session_id;
  std::optional<std::string> current_mode;
  std::vector<std::string> modes;
  std::vector<std::string> models;
  std::optional<std::string> model_config_id;  // a configOptions entry of category "model"
};
std::optional<NewSessionInfo> parse_new_session(const boost::json::value& result);

boost::json::value set_mode_params(const std::string& session, const std::string& mode);
boost::json::value set_model_params(const std::string& session, const std::string& model);
boost::json::value set_config_option_params(const std::string& session, const std::string& config_id,
                                            const std::string& value);

boost::json::value prompt_params(const std::string& session, const std::vector<core::PromptBlock>& blocks);
// The prompt result's stopReason ("end_turn", "cancelled", …).
std::string stop_reason(const boost::json::value& result);
boost::json::value cancel_params(const std::string& session);

// A session/update notification, as what the core cares about.
struct Update {
  enum class Kind { none, chunk, thought, tool_call, notice } kind = Kind::none;
  std::string text;
  core::ToolCallInfo tool_call;
};
Update parse_update(const boost::json::value& params);

// The hot line, read without building a tree (jsonio::scan): a session/update notification whose
// update is a text chunk (agent_message_chunk, agent_thought_chunk) with no _meta. An agent writes
// one per token. Any other line, including one that isn't JSON, gives nullopt and goes the whole
// way (rpc::Connection, parse_update), which reads the chunk lines the same way: a unit test and a
// fuzz target hold the two to the same answer.
//
// With `slot` (one per agent, kept from line to line): a text chunk's line is remembered but for
// its text, and a line that differs from it only there is read without a parse (jsonio::StringSlot),
// as it would be with one. An agent's chunk lines repeat everything but the token's text.
struct TextSlot {
  jsonio::StringSlot text;
  Update::Kind kind = Update::Kind::none;  // of the remembered line
};
std::optional<Update> scan_text_update(std::string_view line, TextSlot* slot = nullptr);

struct PermissionRequest {
  core::ToolCallInfo tool_call;
  std::vector<std::string> names;  // every name the agent gives the tool (title, _meta tool name)
  std::vector<core::PermissionOption> options;
  // One of the agent's own kinds (execute, edit, …): its title is the agent's text, never a page tool.
  bool builtin_kind = false;
};
PermissionRequest parse_permission_request(const boost::json::value& params);
boost::json::value permission_result(const std::optional<std::string>& option_id);

}  // namespace leuria::acp_client
