#include "app/mcp_bridge.hpp"

#include <boost/json.hpp>
#include <cstdint>
#include <limits>

#include "adapters/mcp_server/codec.hpp"
#include "json/read.hpp"

namespace leuria::app {

namespace json = boost::json;

namespace {

// The engine's own JSON-RPC messages, read only to find whole ones and their ids. Deeper than jsonio's 64 levels:
// a reply may carry a page's value, which the engine read with those 64, inside a few levels of its own.
std::optional<json::object> engine_message(std::string_view text) {
  json::parse_options options;
  options.max_depth = 256;
  boost::system::error_code ec;
  json::value v = json::parse(text, ec, {}, options);
  if (ec || !v.is_object()) return std::nullopt;
  const json::value* version = v.as_object().if_contains("jsonrpc");
  if (!version || *version != "2.0") return std::nullopt;  // an error page's JSON, say, is not one
  return std::move(v.as_object());
}

// One message a line: a text with a line break in it (an event's joined data lines) is written anew.
std::string one_line(std::string_view text, const json::object& message) {
  if (text.find_first_of("\r\n") == std::string_view::npos) return std::string(text);
  return json::serialize(message);
}

// JSON-RPC ids compare as values: 1 and 1.0 are one id, whichever way a side wrote it. Integers compare
// exactly (2^53 and 2^53 + 1 are two ids); only a double is compared as a double.
bool same_id(const json::value& a, const json::value& b) {
  if (!a.is_number() || !b.is_number()) return a == b;
  if (a.is_double() || b.is_double()) {
    boost::system::error_code ea, eb;
    const double x = a.to_number<double>(ea), y = b.to_number<double>(eb);
    return !ea && !eb && x == y;
  }
  if (a.is_int64() && b.is_int64()) return a.get_int64() == b.get_int64();
  if (a.is_uint64() && b.is_uint64()) return a.get_uint64() == b.get_uint64();
  const json::value& s = a.is_int64() ? a : b;  // one of each
  const json::value& u = a.is_int64() ? b : a;
  return s.get_int64() >= 0 && static_cast<std::uint64_t>(s.get_int64()) == u.get_uint64();
}

// What a line from the agent expects back.
struct Expected {
  const json::value* id = nullptr;  // a request's id: exactly one reply to it
  bool error_if_silent = false;     // a line that is not one valid message: an error, if the engine sent none
  json::value error_id;             // that error's id: the line's own, else null
};

Expected expected_of(const boost::system::result<json::object, jsonio::ReadError>& line) {
  Expected e;
  if (!line) {  // not JSON, or not one object (a batch)
    e.error_if_silent = true;
    return e;
  }
  const json::value* id = line->if_contains("id");
  switch (mcp_server::message_kind(*line)) {
    case mcp_server::MessageKind::request:
      e.id = id;
      return e;
    case mcp_server::MessageKind::notification:
    case mcp_server::MessageKind::response:  // the agent's answer to a request of the server's
      return e;
    case mcp_server::MessageKind::invalid:
      break;
  }
  e.error_if_silent = true;
  if (id && (id->is_string() || id->is_number())) e.error_id = *id;
  return e;
}

bool replies_to(const json::object& message, const json::value& id) {
  if (!message.contains("result") && !message.contains("error")) return false;
  const json::value* its = message.if_contains("id");
  return its && same_id(*its, id);
}

// Why the answer held no reply, as the agent reads it.
std::string no_reply(const http::ClientResult& answer) {
  switch (answer.failure) {
    case http::Failure::bad_request:
    case http::Failure::unreachable:
      return "Could not reach the engine (" + answer.error + ").";
    case http::Failure::no_answer:
      return "The engine did not answer (" + answer.error + ").";
    case http::Failure::broke_off:
      return "The engine's answer broke off (" + answer.error + ").";
    case http::Failure::none:
      break;
  }
  if (answer.status / 100 != 2) return "The engine refused the request (HTTP " + std::to_string(answer.status) + ").";
  return "The engine's answer held no reply.";
}

std::string error_line(const json::value& id, const std::string& why) {
  return mcp_server::rpc_error_text(json::serialize(id), -32000, why);
}

}  // namespace

std::vector<std::string> SseEvents::feed(std::string_view piece) {
  std::vector<std::string> events;
  std::size_t i = 0;
  if (after_cr_ && !piece.empty()) {
    if (piece.front() == '\n') i = 1;  // the rest of a CRLF
    after_cr_ = false;
  }
  while (i < piece.size() && !overflowed_) {
    const std::size_t end = piece.find_first_of("\r\n", i);
    if (end == std::string_view::npos) {  // a line this piece ends inside: kept for the next
      partial_.append(piece.substr(i));
      if (partial_.size() > max_bytes_) overflowed_ = true;
      break;
    }
    if (partial_.empty()) {
      take_line(piece.substr(i, end - i), events);
    } else {
      partial_.append(piece.substr(i, end - i));
      const std::string line = std::move(partial_);
      partial_.clear();
      take_line(line, events);
    }
    i = end + 1;
    if (piece[end] == '\r') {
      if (i == piece.size()) after_cr_ = true;
      else if (piece[i] == '\n') ++i;
    }
  }
  if (overflowed_) {  // nothing more is read: drop what was kept
    partial_.clear();
    data_.clear();
    has_data_ = false;
  }
  return events;
}

void SseEvents::take_line(std::string_view line, std::vector<std::string>& events) {
  if (line.empty()) {  // the event's end
    if (has_data_) events.push_back(std::move(data_));
    data_.clear();
    has_data_ = false;
    return;
  }
  const std::size_t colon = line.find(':');
  if (line.substr(0, colon) != "data") return;  // a comment, event:, id:, retry:
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (value.starts_with(' ')) value.remove_prefix(1);
  if (has_data_) data_.push_back('\n');
  data_.append(value);
  has_data_ = true;
  if (data_.size() > max_bytes_) overflowed_ = true;
}

std::optional<std::string> SseEvents::finish() {
  if (!has_data_ || overflowed_) return std::nullopt;
  has_data_ = false;
  return std::move(data_);
}

std::vector<std::string> sse_event_data(std::string_view body) {
  SseEvents reader(std::numeric_limits<std::size_t>::max());
  std::vector<std::string> events = reader.feed(body);
  // An event whose blank line never came (the answer broke off just before it): its data lines did
  // end, so it goes on, and the JSON parse that follows says whether it is a whole message.
  if (auto last = reader.finish()) events.push_back(std::move(*last));
  return events;
}

std::optional<std::string> message_line(std::string_view data) {
  auto m = engine_message(data);
  if (!m) return std::nullopt;
  return one_line(data, *m);
}

std::string message_method(std::string_view message) {
  const auto line = jsonio::read_object(message);
  if (!line) return {};
  const auto kind = mcp_server::message_kind(*line);
  if (kind != mcp_server::MessageKind::request && kind != mcp_server::MessageKind::notification) return {};
  return std::string(line->at("method").as_string());
}

std::optional<std::string> cancelled_request_id(std::string_view message) {
  const auto line = jsonio::read_object(message);
  if (!line) return std::nullopt;
  return mcp_server::cancelled_request(*line);
}

BridgeReply bridge_reply(std::string_view message, const http::ClientResult& answer, std::string_view streamed,
                         const std::function<bool(const std::string&)>& cancelled) {
  BridgeReply out;
  const bool ok = answer.status / 100 == 2;
  const std::string_view body = ok ? streamed : std::string_view(answer.body);
  std::vector<std::string> texts;
  if (answer.content_type.find("text/event-stream") != std::string::npos) {
    texts = sse_event_data(body);
  } else if (const auto first = body.find_first_not_of(" \t\r\n"); answer.complete && first != std::string_view::npos) {
    // The engine's keep-alive before a JSON answer is blank lines: the message is what follows them.
    texts.emplace_back(body.substr(first, body.find_last_not_of(" \t\r\n") + 1 - first));
  }

  const auto request = jsonio::read_object(message);
  const Expected expected = expected_of(request);
  const json::value* id = expected.id;
  bool replied = false;
  for (const std::string& text : texts) {
    auto m = engine_message(text);
    if (!m) continue;  // not a whole JSON-RPC message: nothing the agent could read
    if (id && !replied) replied = replies_to(*m, *id);
    out.lines.push_back(one_line(text, *m));
  }
  const bool whole = ok && answer.failure == http::Failure::none;
  if (id && !replied && whole && cancelled && cancelled(json::serialize(*id))) return out;
  if (!whole || (id && !replied)) out.trouble = no_reply(answer);
  if (id && !replied) out.lines.push_back(error_line(*id, no_reply(answer)));
  if (expected.error_if_silent && out.lines.empty()) out.lines.push_back(error_line(expected.error_id, no_reply(answer)));
  return out;
}

}  // namespace leuria::app
