#include "core/permission.hpp"

namespace leuria::core {

std::optional<std::string> page_tool_named(const std::vector<std::string>& names,
                                           const std::vector<std::string>& page_tools) {
  for (const auto& raw : names) {
    for (const auto& tool : page_tools) {
      if (raw == std::string(kPageToolPrefix) + tool || raw == "mcp_webmcp_" + tool ||
          raw == tool + " (webmcp MCP Server)")
        return tool;
    }
  }
  return std::nullopt;
}

std::optional<std::string> choose_option(bool allow, const std::vector<PermissionOption>& options) {
  // Once, never always: a later call is asked about again.
  const char* preferred = allow ? "allow_once" : "reject_once";
  const char* fallback = allow ? "allow_always" : "reject_always";
  for (const auto& o : options)
    if (o.kind == preferred) return o.id;
  for (const auto& o : options)
    if (o.kind == fallback) return o.id;
  return std::nullopt;
}

}  // namespace leuria::core
