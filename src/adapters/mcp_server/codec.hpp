// The mcp_server door's codec: MCP (2024-11-05, 2025-03-26, 2025-06-18) as the page's tools speak
// it to the AI. The only file that knows MCP's method and field names.
#pragma once
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "core/page_tools.hpp"

namespace leuria::mcp_server {

inline constexpr const char* kLatestVersion = "2025-06-18";

// What a JSON-RPC message is, by its members: a request (a string method and an id, a null one too), a
// notification (a string method, no id), a response (no method, an id, and a result or an error), or
// none of these. The endpoint and `leuria mcp-stdio` read a message the same way.
enum class MessageKind { request, notification, response, invalid };
MessageKind message_kind(const boost::json::object& message);
// The client's version when we speak it, else the latest.
std::string negotiate_version(const boost::json::value& initialize_params);
// Whether an MCP-Protocol-Version header names a version this server speaks (MCP 2025-06-18: a server
// answers any other with 400; initialize, where the version is agreed, is not held to it).
bool speaks_version(std::string_view header);
// The sentence for one it doesn't (the header's first 64 bytes, other than printable ASCII as '?').
std::string unsupported_version(std::string_view header);

boost::json::value initialize_result(const std::string& version, const std::string& engine_version);
boost::json::value tools_list(const core::PageTools& tools);
boost::json::value resources_list(const core::PageTools& tools);
boost::json::value prompts_list(const core::PageTools& tools);

struct NamedCall {
  std::string name;  // tool or prompt name, or resource uri
  std::string arguments_json;
};
// Why a call's params were refused: the message of the JSON-RPC error -32602.
struct InvalidParams {
  std::string message;
};
// A call's name and its arguments: absent or null arguments are {}; any other value that is not an
// object is refused (MCP's arguments are an object; passed on as {}, the page would run the tool with
// none of what the AI meant).
boost::system::result<NamedCall, InvalidParams> parse_tool_call(const boost::json::value& params);
// A tools/call request with a string or integer id, read without a tree (once per call, the hot path):
// the id and the arguments as the client wrote them. Nothing for any other message, or a call whose
// name is missing or whose arguments are not an object, which the caller reads as a tree.
struct ScannedCall {
  std::string id_json;
  NamedCall call;
};
std::optional<ScannedCall> scan_tool_call(std::string_view body);
boost::system::result<NamedCall, InvalidParams> parse_resource_read(const boost::json::value& params);
boost::system::result<NamedCall, InvalidParams> parse_prompt_get(const boost::json::value& params);

// A call's result, as JSON text: a tool call's answer is built without a tree. `is_error`: a failed
// tool call, which MCP reports as a result (clients give it to the model).
std::string tool_result(const core::PageAnswer& a, bool is_error = false);
std::string resource_result(const std::string& uri, const core::PageAnswer& a);
std::string prompt_result(const core::PageAnswer& a);

// JSON-RPC answers as text around an id (JSON text) and a result already written.
std::string rpc_result_text(std::string_view id, std::string_view result);
std::string rpc_error_text(std::string_view id, int code, std::string_view message);

inline constexpr int kNotConnected = -32001;  // no page connected (or, for a resource or prompt, it went away)
inline constexpr int kPageError = -32000;     // a resource or prompt that failed; too many calls waiting
inline constexpr int kCancelled = -32800;     // a JSON answer must hold something; an event stream ends with none

// The JSON-RPC answer to a call of `kind` (`name`: a resource's uri) with request id `id` (JSON text),
// from the page's answer. MCP's split: a tool call the page was sent that came back without a result
// (its error, no answer in time, the page gone first), or whose session ended, is a failed call, a
// result with isError, which clients should show the model so it can try again; a call refused before
// the page was asked (too many waiting, no page), and any resource or prompt that failed, a JSON-RPC
// error.
std::string call_answer(core::PageCall::Kind kind, const std::string& name, std::string_view id,
                        const core::PageAnswer& a);

boost::json::value list_changed_notification();

// The id, as JSON text, of the request a notifications/cancelled names (a string or a number); nothing
// for any other message.
std::optional<std::string> cancelled_request(const boost::json::object& message);
// A client's name for one of its calls, unique among the session's calls: its MCP session (the
// Mcp-Session-Id it sends, empty for none) and the request's id as JSON text.
std::string call_tag(std::string_view mcp_session, std::string_view id_json);

}  // namespace leuria::mcp_server
