// What a session produces, in order: the core's events. Doors encode them (the web door as SSE
// `event: <name>`); the core never sees an event name on the wire.
#pragma once
#include <cstdint>
#include <memory>
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

// What only a tool call, a permission or a turn's end carries, kept out of line: the event a token
// makes (its kind, number and text) is moved, copied and queued several times on its way to a page,
// and with these members inline each of those walked eight strings (bench scenario 2, callgrind).
struct EventDetails {
  ToolCallInfo tool_call;
  PermissionInfo permission;
  TurnSummary turn;
};

struct Event {
  EventKind kind = EventKind::ready;
  std::uint64_t seq = 0;  // per session, from 1
  std::string text;
  // Set before the event is published (tool_call, permission, turn_completed) and shared by its
  // copies, never changed after; null for the other kinds, whose accessors below read empty values.
  std::shared_ptr<const EventDetails> details;

  const ToolCallInfo& tool_call() const { return all().tool_call; }
  const PermissionInfo& permission() const { return all().permission; }
  const TurnSummary& turn() const { return all().turn; }
  bool is_final() const {
    return kind == EventKind::completed || kind == EventKind::cancelled || kind == EventKind::failed;
  }

 private:
  const EventDetails& all() const {
    static const EventDetails none;
    return details ? *details : none;
  }
};

}  // namespace leuria::core
