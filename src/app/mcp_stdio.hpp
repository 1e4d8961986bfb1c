// `leuria mcp-stdio <url>`: an MCP server on stdin/stdout (one JSON-RPC message per line) that
// forwards every message to the engine's HTTP endpoint with the token from LEURIA_MCP_TOKEN, for
// agents that speak only stdio MCP. Messages wait on the engine side by side (at most 128 and 64 MB; then stdin
// waits), each reply is written whole when it comes, and when stdin ends the replies still owed are
// written before the bridge exits: 0, or 1 after a line longer than 64 MB.
#pragma once
#include <string>

namespace leuria::app {

int mcp_stdio(const std::string& url);

}  // namespace leuria::app
