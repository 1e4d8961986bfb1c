// A server-sent events parser written from the WHATWG HTML standard ("Parsing an event stream"),
// not from our encoder: what a browser's EventSource, or the SDK's reader, makes of the bytes.
// Lines end at CRLF, a lone CR or a lone LF; a line starting with ":" is a comment; "field: value"
// loses one space after the colon; "data" lines join with LF; an empty line dispatches the event
// (none when the data buffer is empty); an event not ended by an empty line is dropped. The
// stream's bytes are taken as they are: decoding UTF-8 first would turn bad bytes into U+FFFD,
// which is never a line end, so framing is the same either way.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace leuria::fuzz {

struct SseEvent {
  std::string type;  // "message" when no event field was given
  std::string data;
  std::string id;
};

inline std::vector<SseEvent> parse_sse(std::string_view stream) {
  std::vector<SseEvent> events;
  std::string data, type, last_id;
  bool any_data = false;
  if (stream.starts_with("\xEF\xBB\xBF")) stream.remove_prefix(3);  // one leading BOM is ignored
  std::size_t i = 0;
  while (i < stream.size()) {
    const std::size_t end = stream.find_first_of("\r\n", i);
    if (end == std::string_view::npos) break;  // an unfinished line is not processed
    const std::string_view line = stream.substr(i, end - i);
    i = end + 1;
    if (stream[end] == '\r' && i < stream.size() && stream[i] == '\n') ++i;
    if (line.empty()) {
      if (any_data) {
        if (!data.empty() && data.back() == '\n') data.pop_back();
        events.push_back({type.empty() ? "message" : type, data, last_id});
      }
      data.clear();
      type.clear();
      any_data = false;
      continue;
    }
    if (line.front() == ':') continue;
    const std::size_t colon = line.find(':');
    std::string_view field = line.substr(0, colon);
    std::string_view value;
    if (colon != std::string_view::npos) {
      value = line.substr(colon + 1);
      if (value.starts_with(" ")) value.remove_prefix(1);
    }
    if (field == "event") {
      type = std::string(value);
    } else if (field == "data") {
      data += value;
      data += '\n';
      any_data = true;
    } else if (field == "id") {
      if (value.find('\0') == std::string_view::npos) last_id = std::string(value);
    }
    // "retry" and unknown fields change nothing an event carries.
  }
  return events;
}

}  // namespace leuria::fuzz
