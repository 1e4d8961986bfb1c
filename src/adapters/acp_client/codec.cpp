#include "adapters/acp_client/codec.hpp"

#include <boost/json.hpp>

#include "core/ascii.hpp"
#include "json/scan.hpp"

namespace leuria::acp_client {

namespace json = boost::json;

namespace {

std::optional<std::string> str(const json::value* v) {
  if (v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}
const json::value* field(const json::value& v, std::string_view key) {
  return v.is_object() ? v.as_object().if_contains(key) : nullptr;
}

// Claude Code's own tools, all off: the AI may use the page's tools and nothing else.
const char* const kClaudeBuiltins[] = {"Bash", "BashOutput", "KillShell", "KillBash", "Edit", "MultiEdit", "Write",
                                       "Read", "Glob", "Grep", "LS", "NotebookEdit", "NotebookRead", "WebFetch",
                                       "WebSearch", "TodoWrite", "Task", "Agent", "ExitPlanMode", "SlashCommand",
                                       "Skill", "AskUserQuestion", "ListMcpResourcesTool", "ReadMcpResourceTool"};

}  // namespace

json::value initialize_params(const std::string& version) {
  return json::object{
      {"protocolVersion", kProtocolVersion},
      {"clientCapabilities",
       json::object{{"fs", json::object{{"readTextFile", false}, {"writeTextFile", false}}}, {"terminal", false}}},
      {"clientInfo", json::object{{"name", "leuria"}, {"title", "Leuria"}, {"version", version}}},
  };
}

std::optional<AgentInfo> parse_initialize(const json::value& r) {
  auto* pv = field(r, "protocolVersion");
  if (!pv || !pv->is_number()) return std::nullopt;
  AgentInfo info;
  // Non-throwing: 1.5 or 1e12 is an answer that isn't ACP, not an exception out of the agent's start.
  boost::system::error_code ec;
  info.protocol_version = pv->to_number<int>(ec);
  if (ec) return std::nullopt;
  if (auto* caps = field(r, "agentCapabilities")) {
    if (auto* pc = field(*caps, "promptCapabilities"))
      if (auto* img = field(*pc, "image"); img && img->is_bool()) info.images = img->as_bool();
    if (auto* mc = field(*caps, "mcpCapabilities"))
      if (auto* h = field(*mc, "http"); h && h->is_bool()) info.http_mcp = h->as_bool();
  }
  if (auto* ai = field(r, "agentInfo")) info.name = str(field(*ai, "name"));
  return info;
}

namespace {
bool contains_claude(std::string_view s) { return core::ascii_lower(s).find("claude") != std::string::npos; }
}  // namespace

bool is_claude_code(const std::optional<std::string>& reported_name, const std::string& agent_id,
                    const std::string& command) {
  // The agent's own name wins: `npx @agentclientprotocol/claude-agent-acp` is Claude whatever the
  // visitor called it, and another agent installed under a path with "claude" in it is not.
  if (reported_name && !reported_name->empty()) return contains_claude(*reported_name);
  const auto slash = command.rfind('/');
  return agent_id == "claude-acp" || contains_claude(slash == std::string::npos ? command : command.substr(slash + 1));
}

json::value new_session_params(const NewSessionParams& p) {
  json::array servers;
  if (!p.mcp_url.empty()) {
    if (p.http_mcp) {
      servers.push_back(json::object{
          {"type", "http"},
          {"name", "webmcp"},
          {"url", p.mcp_url},
          {"headers", json::array{json::object{{"name", "Authorization"}, {"value", "Bearer " + p.mcp_token}}}}});
    } else {
      servers.push_back(json::object{
          {"name", "webmcp"},
          {"command", p.engine_path},
          {"args", json::array{"mcp-stdio", p.mcp_url}},
          {"env", json::array{json::object{{"name", "LEURIA_MCP_TOKEN"}, {"value", p.mcp_token}}}}});
    }
  }
  json::object params{{"cwd", p.cwd}, {"mcpServers", std::move(servers)}};
  // Claude Code's lockdown goes to every agent: which agent is Claude is a guess (is_claude_code), and
  // a wrong guess must not hand a page an AI with a shell and the user's files. ACP reserves _meta for
  // such extensions; an agent that doesn't know "claudeCode" ignores it.
  json::object meta;
  json::array disallowed;
  for (const char* t : kClaudeBuiltins) disallowed.push_back(json::string(t));
  json::object options{{"tools", json::array{}},
                       {"allowedTools", json::array{"mcp__webmcp"}},
                       {"disallowedTools", std::move(disallowed)},
                       {"settingSources", json::array{}},
                       {"strictMcpConfig", true}};
  if (p.claude && p.max_turns > 0) options["maxTurns"] = p.max_turns;
  meta["claudeCode"] = json::object{{"options", std::move(options)}};
  if (p.system_prompt && p.claude) meta["systemPrompt"] = *p.system_prompt;
  params["_meta"] = std::move(meta);
  return params;
}

std::optional<NewSessionInfo> parse_new_session(const json::value& r) {
  auto id = str(field(r, "sessionId"));
  if (!id || id->empty()) return std::nullopt;
  NewSessionInfo info;
  info.session_id = *id;
  if (auto* modes = field(r, "modes")) {
    info.current_mode = str(field(*modes, "currentModeId"));
    if (auto* list = field(*modes, "availableModes"); list && list->is_array())
      for (auto& m : list->as_array())
        if (auto mid = str(field(m, "id"))) info.modes.push_back(*mid);
  }
  if (auto* models = field(r, "models"))
    if (auto* list = field(*models, "availableModels"); list && list->is_array())
      for (auto& m : list->as_array())
        if (auto mid = str(field(m, "modelId"))) info.models.push_back(*mid);
  if (auto* opts = field(r, "configOptions"); opts && opts->is_array())
    for (auto& o : opts->as_array())
      if (str(field(o, "category")) == "model") info.model_config_id = str(field(o, "id"));
  return info;
}

json::value set_mode_params(const std::string& session, const std::string& mode) {
  return json::object{{"sessionId", session}, {"modeId", mode}};
}
json::value set_model_params(const std::string& session, const std::string& model) {
  return json::object{{"sessionId", session}, {"modelId", model}};
}
json::value set_config_option_params(const std::string& session, const std::string& id, const std::string& value) {
  return json::object{{"sessionId", session}, {"configId", id}, {"value", value}};
}

json::value prompt_params(const std::string& session, const std::vector<core::PromptBlock>& blocks) {
  json::array prompt;
  for (auto& b : blocks) {
    if (b.type == core::PromptBlock::Type::text)
      prompt.push_back(json::object{{"type", "text"}, {"text", b.text}});
    else
      prompt.push_back(json::object{{"type", "image"}, {"mimeType", b.mime_type}, {"data", b.data}});
  }
  return json::object{{"sessionId", session}, {"prompt", std::move(prompt)}};
}

std::string stop_reason(const json::value& r) { return str(field(r, "stopReason")).value_or("end_turn"); }

json::value cancel_params(const std::string& session) { return json::object{{"sessionId", session}}; }

namespace {

core::ToolCallInfo tool_call_of(const json::value& u) {
  core::ToolCallInfo t;
  t.id = str(field(u, "toolCallId")).value_or("");
  t.title = str(field(u, "title"));
  t.kind = str(field(u, "kind"));
  t.status = str(field(u, "status"));
  if (auto* meta = field(u, "_meta"))
    if (auto* cc = field(*meta, "claudeCode")) t.tool_name = str(field(*cc, "toolName"));
  return t;
}

}  // namespace

Update parse_update(const json::value& params) {
  Update out;
  auto* u = field(params, "update");
  if (!u) return out;
  auto kind = str(field(*u, "sessionUpdate")).value_or("");
  if (kind == "agent_message_chunk" || kind == "agent_thought_chunk") {
    auto* content = field(*u, "content");
    if (!content || str(field(*content, "type")) != "text") return out;
    out.kind = kind == "agent_message_chunk" ? Update::Kind::chunk : Update::Kind::thought;
    out.text = str(field(*content, "text")).value_or("");
    // Claude Code tags notices about itself (billing, modes) as informational: not the AI's answer.
    if (auto* meta = field(*u, "_meta"))
      if (auto* cc = field(*meta, "claudeCode"); cc && str(field(*cc, "kind")) == "informational")
        out.kind = Update::Kind::notice;
  } else if (kind == "tool_call" || kind == "tool_call_update") {
    out.kind = Update::Kind::tool_call;
    out.tool_call = tool_call_of(*u);
  }
  return out;
}

namespace {

// jsonio::scan's visitor for scan_text_update: notes the few members the fast path needs and
// whether anything that would make the line read differently is there (an id, a _meta).
struct TextUpdateReader {
  using Path = jsonio::Path;
  bool top_object = false, has_id = false, params_object = false, update_object = false, meta = false;
  bool content_object = false;
  std::optional<std::string> method, kind, type, text;
  std::optional<std::string>* target = nullptr;
  const char* kept_at_ = nullptr;  // where the string being kept begins, as scan saw it
  const char* text_at = nullptr;   // text's (see jsonio::StringSlot::learn)

  static bool in_update(const Path& p) { return p.at(0, "params") && p.at(1, "update"); }
  static bool in_content(const Path& p) { return in_update(p) && p.at(2, "content"); }

  // A value of any kind starts at p.
  void value(const Path& p, bool is_object) {
    switch (p.depth()) {
      case 0: top_object = is_object; break;
      case 1:
        if (p.at(0, "id")) has_id = true;
        if (p.at(0, "params")) params_object = is_object;
        break;
      case 2:
        if (in_update(p)) update_object = is_object;
        break;
      case 3:
        if (in_update(p) && p.at(2, "_meta")) meta = true;
        if (in_content(p)) content_object = is_object;
        break;
      default: break;
    }
  }

  // jsonio::scan's visitor
  void begin(const Path& p, bool is_array) { value(p, !is_array); }
  void end(const Path&, bool, std::size_t) {}
  bool wants_string(const Path& p) {
    value(p, false);
    target = nullptr;
    if (p.depth() == 1 && p.at(0, "method")) target = &method;
    else if (p.depth() == 3 && in_update(p) && p.at(2, "sessionUpdate")) target = &kind;
    else if (p.depth() == 4 && in_content(p) && p.at(3, "type")) target = &type;
    else if (p.depth() == 4 && in_content(p) && p.at(3, "text")) target = &text;
    return target != nullptr;
  }
  void kept_at(const char* at) { kept_at_ = at; }
  void string(const Path&, std::string s) {
    if (target == &text) text_at = kept_at_;
    if (target) *target = std::move(s);
    target = nullptr;
  }
  void integer(const Path& p, std::int64_t) { value(p, false); }
  void other(const Path& p) { value(p, false); }
};

}  // namespace

std::optional<Update> scan_text_update(std::string_view line, TextSlot* slot) {
  if (slot && slot->text.ready()) {
    Update out;
    if (slot->text.match(line, out.text)) {
      out.kind = slot->kind;
      return out;
    }
  }
  TextUpdateReader r;
  if (!jsonio::scan(line, r)) return std::nullopt;
  // A string value then overwritten by a non-string one can't happen: a repeated key is refused.
  if (!r.top_object || r.has_id || r.method != "session/update" || !r.params_object || !r.update_object || r.meta ||
      !r.content_object || r.type != "text" || !r.text)
    return std::nullopt;
  Update out;
  if (r.kind == "agent_message_chunk")
    out.kind = Update::Kind::chunk;
  else if (r.kind == "agent_thought_chunk")
    out.kind = Update::Kind::thought;
  else
    return std::nullopt;
  // Everything but the text decided this line's reading: another with only the text changed reads alike.
  if (slot && r.text_at && slot->text.learn(line, r.text_at, *r.text)) slot->kind = out.kind;
  out.text = std::move(*r.text);
  return out;
}

PermissionRequest parse_permission_request(const json::value& params) {
  PermissionRequest out;
  if (auto* tc = field(params, "toolCall")) {
    out.tool_call = tool_call_of(*tc);
    if (out.tool_call.tool_name) out.names.push_back(*out.tool_call.tool_name);
    // A title is text the agent builds, for a shell from the model's own command: it names a page
    // tool only on a call that isn't a built-in kind (MCP tools are "other").
    out.builtin_kind = out.tool_call.kind && *out.tool_call.kind != "other";
    if (out.tool_call.title && !out.builtin_kind) out.names.push_back(*out.tool_call.title);
  }
  if (auto* opts = field(params, "options"); opts && opts->is_array())
    for (auto& o : opts->as_array())
      out.options.push_back({str(field(o, "optionId")).value_or(""), str(field(o, "kind")).value_or("")});
  return out;
}

json::value permission_result(const std::optional<std::string>& option_id) {
  if (!option_id) return json::object{{"outcome", json::object{{"outcome", "cancelled"}}}};
  return json::object{{"outcome", json::object{{"outcome", "selected"}, {"optionId", *option_id}}}};
}

}  // namespace leuria::acp_client
