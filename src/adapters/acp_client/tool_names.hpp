// The names an agent's tool_call updates gave its calls, for the permission request that may follow
// without one (Claude Code names the tool only in the tool_call's _meta). Bounded: a call is
// forgotten once it completed or failed, and all are at each new turn (a cancelled turn's calls may never
// finish); an agent that opens calls without end, or sends ids and names no page tool could have, fills a
// fixed number of small slots and no more.
#pragma once
#include <cstddef>
#include <map>
#include <optional>
#include <string>

namespace leuria::acp_client {

class ToolNames {
 public:
  static constexpr std::size_t kMaxCalls = 256;
  static constexpr std::size_t kMaxIdBytes = 256;
  static constexpr std::size_t kMaxNameBytes = 1024;  // far beyond a page tool's, however the agent words it

  // One tool_call / tool_call_update: `name` is what it gave (empty: none). Returns the call's name,
  // its own or the one remembered.
  std::string seen(const std::string& id, std::string name, const std::optional<std::string>& status) {
    auto it = names_.find(id);
    if (name.empty() && it != names_.end()) name = it->second;
    const bool finished = status == "completed" || status == "failed";
    if (finished) {
      if (it != names_.end()) names_.erase(it);
    } else if (!name.empty() && !id.empty() && id.size() <= kMaxIdBytes && name.size() <= kMaxNameBytes) {
      if (it != names_.end()) it->second = name;
      else if (names_.size() < kMaxCalls) names_.emplace(id, name);
    }
    return name;
  }
  std::optional<std::string> find(const std::string& id) const {
    auto it = names_.find(id);
    return it == names_.end() ? std::nullopt : std::optional(it->second);
  }
  std::size_t size() const { return names_.size(); }
  void clear() { names_.clear(); }

 private:
  std::map<std::string, std::string> names_;
};

}  // namespace leuria::acp_client
