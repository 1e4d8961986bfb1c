// The WebMCP channel's codec: the page's messages in, the engine's messages out (protocol, Page
// tools). The only file that knows these message and field names.
#pragma once
#include <boost/system/result.hpp>
#include <optional>
#include <string>
#include <variant>

#include "core/page_tools.hpp"

namespace leuria::web {

// {"type":"register","token":…}: the token as sent (a base64 blob or the inner token) is unwrapped
// to the inner one. The error is the message for {"type":"error"}.
struct RegisterRefusal {
  std::string message;
};
boost::system::result<std::string, RegisterRefusal> parse_register(std::string_view text);
std::string encode_register_success(const std::string& channel_path, const std::string& channel_token);
std::string encode_error(std::string_view message);

struct RegisterTool {
  core::ToolSpec spec;
  std::string annotations_json;
};
struct DeregisterTool {
  std::string name;
};
struct RegisterResource {
  core::ResourceSpec spec;
};
struct RegisterPrompt {
  core::PromptSpec spec;
};
struct PageResponse {
  std::string id;
  core::PageAnswer answer;
};
struct Ping {};
struct Pong {};
struct Invalid {
  std::string message;
};
using PageMessage =
    std::variant<RegisterTool, DeregisterTool, RegisterResource, RegisterPrompt, PageResponse, Ping, Pong, Invalid>;

// A page's message. A response's result goes on as the page wrote it (answer.json; answer.text too
// unless it is a string); only an "error" or a registration is read into a tree.
PageMessage parse_page_message(std::string_view text);
// The same, always through a tree: what parse_page_message falls back to, and its unit test's reference.
PageMessage parse_page_message_tree(std::string_view text);

std::string encode_ack(std::string_view registration, std::string_view name);
std::string encode_pong();
std::string encode_ping();
std::string encode_call(const core::PageCall& call);
// Why a tool call's arguments can't go to the page (not JSON, or not an object), in words for the AI
// that wrote them; nothing when they can.
std::optional<std::string> arguments_refusal(std::string_view arguments_json);

}  // namespace leuria::web
