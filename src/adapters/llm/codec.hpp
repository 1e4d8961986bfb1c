// The llm door's codec: OpenAI chat completions (what Ollama, LM Studio, llama.cpp's server and
// hosted APIs speak). The only file that knows its field names.
#pragma once
#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/backend.hpp"
#include "core/tools.hpp"
#include "json/string_slot.hpp"

namespace leuria::llm {

// Tool-call indexes a model may use in one answer (more is garbage, not a plan).
inline constexpr int kMaxToolCalls = 128;

struct ToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // JSON text, assembled from deltas
};

// One `data:` line of a streamed completion.
struct Delta {
  std::string content;
  std::string reasoning;  // reasoning_content (DeepSeek, llama.cpp) or reasoning (Ollama, OpenRouter)
  struct ToolCallPart {
    int index = -1;  // -1: the piece named none (Gemini's OpenAI layer leaves it out)
    std::optional<std::string> id;
    std::optional<std::string> name;
    std::string arguments;
  };
  std::vector<ToolCallPart> tool_calls;
  std::optional<std::string> finish_reason;
  std::optional<std::string> error;  // an error object sent inside the stream
};

boost::json::object system_message(const std::string& text);
boost::json::object user_message(const std::vector<core::PromptBlock>& blocks);
boost::json::object assistant_message(const std::string& text, const std::vector<ToolCall>& calls);
boost::json::object tool_message(const std::string& call_id, const std::string& content);
// Each image part of the conversation's user messages becomes a text part with its note: `notes` in
// the order the images were sent (one the list runs short of gets a plain one).
void images_to_notes(boost::json::array& messages, const std::vector<std::string>& notes);

std::string request_body(const std::string& model, const boost::json::array& messages,
                         const std::vector<core::ToolSpec>& tools, bool forbid_tools);

// nullopt for lines that aren't data (comments, blank, [DONE] is reported as done).
struct Line {
  bool done = false;
  std::optional<Delta> delta;
};
// With `content_slot` (one per stream, kept from line to line): a chunk that carries only text is
// remembered but for that text, and a line that differs from it only there is read without a
// parse (jsonio::StringSlot), as it would be with one. A server's chunks repeat everything but
// the token's text and, at most, the top-level `created` (a time in whole seconds, which nothing
// here reads, so it may change too), so most of a stream's lines are read this way.
Line parse_stream_line(std::string_view line, jsonio::StringSlot* content_slot = nullptr);

// The lines parse_stream_line is not for: any line but `data:`, and every line of an `event: error`.
// A stream can fail with HTTP 200 already sent: llama.cpp's server writes `error: {"code":…,
// "message":…}`, others `event: error` then a `data:` line. Either is an error delta, its message
// read at the top level or under "error". `in_error_event` is kept by the caller from line to line:
// set by `event: error`, cleared by the blank line that ends the event.
Line parse_event_line(std::string_view line, bool& in_error_event);

// The ids in a /models answer, in order.
std::vector<std::string> parse_models(const std::string& body);

// A readable message from an error answer's body ({"error":{"message":…}}, {"error":"…"}, vLLM's
// {"object":"error","message":…}, FastAPI's {"detail":…}, or the first line of a text): one line
// of at most about 200 bytes, valid UTF-8.
std::string error_message(const std::string& body);

// A server's message as a page shows it: line breaks and tabs become one space, cut to about
// `max_bytes` (whole characters, "…" when cut), valid UTF-8.
std::string one_line(std::string_view text, std::size_t max_bytes = 200);

}  // namespace leuria::llm
