// The mcp_server door's codec: MCP (2024-11-05, 2025-03-26, 2025-06-18) as the page's tools speak
// it to the AI. The only file that knows MCP's method and field names.
#pragma once
#include <boost/json/value.hpp>
#include <optional>
#include <string>

#include "core/page_tools.hpp"

namespace leuria::mcp_server {

inline constexpr const char* kLatestVersion = "2025-06-18";
// The client's version when we speak it, else the latest.
std::string negotiate_version(const boost::json::value& initialize_params);

boost::json::value initialize_result(const std::string& version, const std::string& engine_version);
boost::json::value tools_list(const core::PageTools& tools);
boost::json::value resources_list(const core::PageTools& tools);
boost::json::value prompts_list(const core::PageTools& tools);

struct NamedCall {
  std::string name;  // tool or prompt name, or resource uri
  std::string arguments_json;
};
std::optional<NamedCall> parse_tool_call(const boost::json::value& params);
std::optional<NamedCall> parse_resource_read(const boost::json::value& params);
std::optional<NamedCall> parse_prompt_get(const boost::json::value& params);

boost::json::value tool_result(const core::PageAnswer& a);
boost::json::value resource_result(const std::string& uri, const core::PageAnswer& a);
boost::json::value prompt_result(const core::PageAnswer& a);

boost::json::value list_changed_notification();

}  // namespace leuria::mcp_server
