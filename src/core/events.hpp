// What a session produces, in order: the core's events. Doors encode them (the web door as SSE
// `event: <name>`); the core never sees an event name on the wire.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace leuria::core {

enum class EventKind {
  webmcp_ready,    // the page's tool channel can be registered (approved)
  ready,           // the AI is up and idle
  turn_start,
  chunk,           // text: the AI's text
  thought,         // text: the AI's reasoning
  tool_call,       // tool_call
  permission,      // permission
  log,             // text: a line the agent wrote to stderr
  turn_completed,  // turn
  completed,       // final
  cancelled,       // final
  failed,          // final; text: the error
};

struct ToolCallInfo {
  std::string id;
  std::optional<std::string> title;
  std::optional<std::string> kind;
  std::optional<std::string> status;  // pending, in_progress, completed, failed
  std::optional<std::string> tool_name;
};

struct PermissionInfo {
  std::string tool_name;
  bool allow = false;
};

struct TurnSummary {
  std::string text;
  std::int64_t duration_ms = 0;
};

struct Event {
  EventKind kind = EventKind::ready;
  std::uint64_t seq = 0;  // per session, from 1
  std::string text;
  ToolCallInfo tool_call;
  PermissionInfo permission;
  TurnSummary turn;

  bool is_final() const {
    return kind == EventKind::completed || kind == EventKind::cancelled || kind == EventKind::failed;
  }
};

}  // namespace leuria::core
