// The permission policy: the AI may use the page's own tools and nothing else. Agents name a page
// tool differently (Claude: mcp__webmcp__<name>, Gemini: mcp_webmcp_<name>, or "<name> (webmcp MCP
// Server)") and offer options with different ids, so options are chosen by their kind.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace leuria::core {

inline constexpr const char* kPageToolPrefix = "mcp__webmcp__";

// The page tool that one of `names` refers to, given the session's tool names; nullopt when none.
std::optional<std::string> page_tool_named(const std::vector<std::string>& names,
                                           const std::vector<std::string>& page_tools);

struct PermissionOption {
  std::string id;
  std::string kind;  // allow_once, allow_always, reject_once, reject_always
};

// The option to pick for an allow or a reject; nullopt when the agent offers none that fits (then
// the request is answered as cancelled, which also refuses).
std::optional<std::string> choose_option(bool allow, const std::vector<PermissionOption>& options);

}  // namespace leuria::core
