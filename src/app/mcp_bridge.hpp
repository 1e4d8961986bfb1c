#pragma once
// What `leuria mcp-stdio` writes to its agent for one message it forwarded to the engine's MCP endpoint,
// decided from the message and the engine's answer alone (no I/O, so the rules are unit-tested):
//   - the JSON-RPC messages of the answer, whole ones only: an SSE event's data from whole lines (its
//     data lines joined), or a JSON body read to its end, that parses as a JSON-RPC object. A message
//     the answer cut short would be a broken line for the agent; each goes out as one line;
//   - for a request (an object with a method and an id) whose answer held no reply to its id, an error
//     reply (-32000) saying why: so each request gets exactly one reply, the engine's or ours;
//   - for a line that is not one valid JSON-RPC message (not JSON, a batch, an object that is neither a
//     request, a notification nor a response) and got no message back, an error, with the line's id when
//     it has one, else a null id, as JSON-RPC answers what it cannot read.
// A notification, or the agent's response to a request of the server's, gets only what the engine sent
// (nothing, normally). What the engine sends unasked (its GET stream) is read with SseEvents and
// message_line, by the same rule: whole messages only, one a line.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "http/client.hpp"

namespace leuria::app {

struct BridgeReply {
  std::vector<std::string> lines;    // for the agent, in order, each without its line break
  std::optional<std::string> trouble;  // a sentence for stderr when the engine's answer was not whole
};

// `streamed`: the 2xx body as fetch's on_data gathered it (a non-2xx body is in `answer.body`).
// `cancelled(id)`, asked only for a request that got no reply (its id as JSON text): true when the agent
// cancelled it. MCP has no reply to a cancelled request, so none is made up for it.
BridgeReply bridge_reply(std::string_view message, const http::ClientResult& answer, std::string_view streamed,
                         const std::function<bool(const std::string&)>& cancelled = {});

// The id, as JSON text, of the request a notifications/cancelled line names; nothing for any other line.
std::optional<std::string> cancelled_request_id(std::string_view message);

// The data of each event of an SSE body (event-stream rules: CR, LF or CRLF ends a line; a blank line
// ends an event; its `data:` lines joined with LF), from whole lines only: a line the body ended inside
// is dropped. The last event counts without its blank line, for a body that broke off just before it.
std::vector<std::string> sse_event_data(std::string_view body);

// The same rules for a stream read piece by piece (the engine's GET stream of server messages, which
// stays open): `feed` gives the data of each event a piece completes, whatever the pieces' boundaries
// (a CRLF split between two pieces is one line end). An event's data, or a line, past `max_bytes` is
// not kept: `overflowed()` says so, nothing more is read, and the caller drops the stream.
class SseEvents {
 public:
  explicit SseEvents(std::size_t max_bytes = 4 * 1024 * 1024) : max_bytes_(max_bytes) {}
  std::vector<std::string> feed(std::string_view piece);
  // At the body's end: the event whose blank line never came, if its data lines did end.
  std::optional<std::string> finish();
  bool overflowed() const { return overflowed_; }

 private:
  void take_line(std::string_view line, std::vector<std::string>& events);
  std::size_t max_bytes_;
  std::string partial_;  // the line the last piece ended inside
  std::string data_;     // the event's data lines so far
  bool has_data_ = false;
  bool after_cr_ = false;  // the last piece ended a line with CR: an LF first in the next is part of it
  bool overflowed_ = false;
};

// A message from the engine's stream as one line for the agent: a whole JSON-RPC message (an event's
// joined data lines are written anew on one line); nothing for anything else.
std::optional<std::string> message_line(std::string_view data);

// The method of a request or notification line from the agent; empty for anything else.
std::string message_method(std::string_view message);

}  // namespace leuria::app
