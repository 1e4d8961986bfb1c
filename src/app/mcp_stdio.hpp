// `leuria mcp-stdio <url>`: an MCP server on stdin/stdout (one JSON-RPC message per line) that
// forwards every message to the engine's HTTP endpoint with the token from LEURIA_MCP_TOKEN, for
// agents that speak only stdio MCP.
#pragma once
#include <string>

namespace leuria::app {

int mcp_stdio(const std::string& url);

}  // namespace leuria::app
