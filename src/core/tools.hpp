// The tools a session offers its AI (the page's tools, declared over WebMCP). The core asks two
// things: "which tools does this session have" and "call this tool". Schemas and arguments travel
// as JSON text the core never parses.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <optional>
#include <string>
#include <vector>

namespace leuria::core {

struct ToolSpec {
  std::string name;
  std::string description;
  std::string input_schema_json;  // a JSON Schema object, as text
};

struct ToolResult {
  bool is_error = false;
  std::string text;  // a string result as it is; anything else as JSON text; or the error message
};

class ToolRegistry {
 public:
  virtual ~ToolRegistry() = default;
  virtual std::vector<ToolSpec> tools() const = 0;
  virtual boost::asio::awaitable<ToolResult> call(std::string name, std::string arguments_json) = 0;
  // The turn was cancelled: the calls it waits on (in call(), or an agent's over MCP) end now, as errors,
  // rather than when the page answers (a call may wait 10 minutes for the visitor).
  virtual void cancel_calls() {}
};

// A session whose page declared no tools (and, until page tools exist, every session).
class NoTools final : public ToolRegistry {
 public:
  std::vector<ToolSpec> tools() const override { return {}; }
  boost::asio::awaitable<ToolResult> call(std::string name, std::string) override {
    co_return ToolResult{true, "Unknown tool: " + name};
  }
};

}  // namespace leuria::core
