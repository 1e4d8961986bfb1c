#include "adapters/llm/codec.hpp"

#include <boost/json.hpp>

#include "core/plain_text.hpp"
#include "json/read.hpp"
#include "json/scan.hpp"

namespace leuria::llm {

namespace json = boost::json;

json::object system_message(const std::string& text) { return {{"role", "system"}, {"content", text}}; }

json::object user_message(const std::vector<core::PromptBlock>& blocks) {
  bool only_text = true;
  for (auto& b : blocks) only_text = only_text && b.type == core::PromptBlock::Type::text;
  if (only_text) {
    std::string text;
    for (auto& b : blocks) {
      if (!text.empty()) text += "\n\n";
      text += b.text;
    }
    return {{"role", "user"}, {"content", text}};
  }
  json::array parts;
  for (auto& b : blocks) {
    if (b.type == core::PromptBlock::Type::text)
      parts.push_back(json::object{{"type", "text"}, {"text", b.text}});
    else
      parts.push_back(json::object{{"type", "image_url"},
                                   {"image_url", json::object{{"url", "data:" + b.mime_type + ";base64," + b.data}}}});
  }
  return {{"role", "user"}, {"content", std::move(parts)}};
}

json::object assistant_message(const std::string& text, const std::vector<ToolCall>& calls) {
  json::object m{{"role", "assistant"}, {"content", text}};
  if (!calls.empty()) {
    json::array list;
    for (auto& c : calls)
      list.push_back(json::object{{"id", c.id},
                                  {"type", "function"},
                                  {"function", json::object{{"name", c.name}, {"arguments", c.arguments}}}});
    m["tool_calls"] = std::move(list);
  }
  return m;
}

json::object tool_message(const std::string& call_id, const std::string& content) {
  return {{"role", "tool"}, {"tool_call_id", call_id}, {"content", content}};
}

void images_to_notes(json::array& messages, const std::vector<std::string>& notes) {
  std::size_t next = 0;
  for (auto& m : messages) {
    auto* content = m.is_object() ? m.as_object().if_contains("content") : nullptr;
    if (!content || !content->is_array()) continue;
    for (auto& part : content->as_array()) {
      const auto* type = part.is_object() ? part.as_object().if_contains("type") : nullptr;
      if (!type || *type != "image_url") continue;
      std::string note = next < notes.size() ? notes[next] : "[An image this AI can't read.]";
      ++next;
      part = json::object{{"type", "text"}, {"text", std::move(note)}};
    }
  }
}

std::string request_body(const std::string& model, const json::array& messages,
                         const std::vector<core::ToolSpec>& tools, bool forbid_tools) {
  // Written member by member: an object holding the conversation copied every message of it, once
  // per model request, to serialize it once (a turn's start, bench scenario 5).
  std::string out = "{\"model\":";
  out += json::serialize(json::string_view(model));
  out += ",\"messages\":";
  out += json::serialize(messages);
  out += ",\"stream\":true";
  if (!tools.empty()) {
    json::array list;
    for (auto& t : tools) {
      json::value schema = json::object{{"type", "object"}, {"properties", json::object{}}};
      if (auto declared = jsonio::read_object(t.input_schema_json)) schema = std::move(*declared);
      list.push_back(json::object{
          {"type", "function"},
          {"function", json::object{{"name", t.name}, {"description", t.description}, {"parameters", schema}}}});
    }
    out += ",\"tools\":";
    out += json::serialize(list);
    if (forbid_tools) out += ",\"tool_choice\":\"none\"";
  }
  out += '}';
  return out;
}

namespace {

// Reads one streamed chunk (`chat.completion.chunk`) as the parser goes, keeping only what the
// tool loop uses: choices[0]'s delta text, reasoning, tool-call parts and finish_reason, or a
// top-level error. jsonio::scan, not a tree: this runs once per token.
struct ChunkReader {
  using Path = jsonio::Path;
  enum class Kind { object, array, string, integer, other };

  bool top_object = false;
  bool error = false;  // a top-level "error" object or string ("error": null is none: some servers send it)
  std::string error_text;
  bool choices_array = false;
  std::size_t choices = 0;
  bool first_choice_object = false;
  Delta d;
  std::string reasoning_content, reasoning;
  Delta::ToolCallPart part;
  bool part_ok = true;
  std::string* target = nullptr;  // where the string being read goes
  std::optional<std::string>* optional_target = nullptr;
  const char* kept_at_ = nullptr;     // where the string being kept begins, as scan saw it
  const char* content_at = nullptr;  // d.content's (see jsonio::StringSlot::learn)
  std::string_view integer_text_;     // the integer being read, as written
  std::string_view created;           // the top-level "created", which nothing here reads

  static bool in_first_choice(const Path& p) { return p.at(0, "choices") && p.at(1, std::size_t{0}); }
  static bool in_delta(const Path& p) { return in_first_choice(p) && p.at(2, "delta"); }
  static bool in_tool_call(const Path& p) { return in_delta(p) && p.at(3, "tool_calls") && p.depth() > 4 && p.is_array(4); }

  // A value starts at `p` (for a container: before it opens).
  void value(const Path& p, Kind k) {
    const std::size_t depth = p.depth();
    if (depth == 0) {
      top_object = k == Kind::object;
    } else if (depth == 1) {
      if (p.at(0, "error")) {
        error = k == Kind::object || k == Kind::string;
        if (k == Kind::string) target = &error_text;
      } else if (p.at(0, "choices")) {
        choices_array = k == Kind::array;
      }
    } else if (depth == 2) {
      if (p.at(0, "error") && p.at(1, "message") && k == Kind::string) target = &error_text;
      if (in_first_choice(p)) first_choice_object = k == Kind::object;
    } else if (depth == 3) {
      if (in_first_choice(p) && p.at(2, "finish_reason") && k == Kind::string) optional_target = &d.finish_reason;
    } else if (depth == 4) {
      if (in_delta(p) && k == Kind::string) {
        if (p.at(3, "content")) target = &d.content;
        else if (p.at(3, "reasoning_content")) target = &reasoning_content;
        else if (p.at(3, "reasoning")) target = &reasoning;
      }
    } else if (depth == 5) {
      if (in_tool_call(p) && k == Kind::object) {  // an element that isn't an object is skipped
        part = {};
        part_ok = true;
      }
    } else if (depth == 6) {
      if (in_tool_call(p) && !p.is_array(5)) {
        // A garbage index (1.5, 1e12, "1", -1) drops the part, as a wrong index would misplace it.
        if (p.at(5, "index") && k != Kind::integer) part_ok = false;
        if (p.at(5, "id") && k == Kind::string) optional_target = &part.id;
      }
    } else if (depth == 7) {
      if (in_tool_call(p) && p.at(5, "function") && k == Kind::string) {
        if (p.at(6, "name")) optional_target = &part.name;
        else if (p.at(6, "arguments")) target = &part.arguments;
      }
    }
  }

  // jsonio::scan's visitor
  void begin(const Path& p, bool is_array) { value(p, is_array ? Kind::array : Kind::object); }
  void end(const Path& p, bool is_array, std::size_t size) {
    if (p.depth() == 1 && p.at(0, "choices") && is_array) choices = size;
    if (p.depth() == 5 && !is_array && in_tool_call(p) && part_ok) d.tool_calls.push_back(std::move(part));
  }
  bool wants_string(const Path& p) {
    target = nullptr;
    optional_target = nullptr;
    value(p, Kind::string);
    return target || optional_target;
  }
  void kept_at(const char* at) { kept_at_ = at; }
  void string(const Path&, std::string s) {
    if (target == &d.content) content_at = kept_at_;
    if (target) *target = std::move(s);
    if (optional_target) *optional_target = std::move(s);
    target = nullptr;
    optional_target = nullptr;
  }
  void integer_text(std::string_view t) { integer_text_ = t; }
  void integer(const Path& p, std::int64_t i) {
    if (p.top("created")) created = integer_text_;
    value(p, Kind::integer);
    if (p.depth() == 6 && in_tool_call(p) && p.at(5, "index")) {
      if (i < 0 || i >= kMaxToolCalls)
        part_ok = false;
      else
        part.index = static_cast<int>(i);
    }
  }
  void other(const Path& p) { value(p, Kind::other); }
};

}  // namespace

Line parse_stream_line(std::string_view line, jsonio::StringSlot* content_slot) {
  Line out;
  if (!line.starts_with("data:")) return out;
  line.remove_prefix(5);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line == "[DONE]") {
    out.done = true;
    return out;
  }
  if (content_slot && content_slot->ready()) {
    Delta d;
    if (content_slot->match(line, d.content)) {
      out.delta = std::move(d);
      return out;
    }
  }
  ChunkReader r;
  if (!jsonio::scan(line, r) || !r.top_object) return out;  // not a JSON object: not a chunk
  if (r.error) {
    Delta e;
    e.error = r.error_text.empty() ? "The model server reported an error" : std::move(r.error_text);
    out.delta = std::move(e);
    return out;
  }
  if (!r.choices_array || r.choices == 0) {  // a chunk without a choice (usage, keep-alive): nothing to say
    out.delta = Delta{};
    return out;
  }
  if (!r.first_choice_object) return out;
  // A chunk whose delta is its text alone: another with only that text changed reads as the text,
  // and so does one whose `created` (a time in whole seconds, so it changes as the stream goes) is
  // another integer as well.
  if (content_slot && r.content_at && r.d.tool_calls.empty() && !r.d.finish_reason && r.reasoning_content.empty() &&
      r.reasoning.empty())
    content_slot->learn(line, r.content_at, r.d.content, r.created);
  r.d.reasoning = !r.reasoning_content.empty() ? std::move(r.reasoning_content) : std::move(r.reasoning);
  out.delta = std::move(r.d);
  return out;
}

namespace {

// The message of an error object: at its top level (llama.cpp's stream error, vLLM's
// {"object":"error"}), under "error" (OpenAI's shape, or a string), or FastAPI's "detail" (a string,
// or a list of {"msg":…}).
std::optional<std::string> message_in(const json::object& o) {
  const auto text = [](const json::value* v) -> std::optional<std::string> {
    if (v && v->is_string() && !v->as_string().empty()) return std::string(v->as_string());
    return std::nullopt;
  };
  if (auto* e = o.if_contains("error")) {
    if (auto m = text(e)) return m;
    if (e->is_object())
      if (auto m = text(e->as_object().if_contains("message"))) return m;
  }
  if (auto m = text(o.if_contains("message"))) return m;
  if (auto* d = o.if_contains("detail")) {
    if (auto m = text(d)) return m;
    if (d->is_array() && !d->as_array().empty() && d->as_array()[0].is_object())
      if (auto m = text(d->as_array()[0].as_object().if_contains("msg"))) return m;
  }
  return std::nullopt;
}

// What an error sent inside the stream says: its JSON's message, or the text itself.
Line stream_error(std::string_view value) {
  while (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  Delta e;
  if (auto v = jsonio::read_object(value)) {
    if (auto m = message_in(*v)) e.error = std::move(*m);
  } else if (!value.empty()) {
    e.error = std::string(value);
  }
  if (!e.error) e.error = "The model server reported an error";
  Line out;
  out.delta = std::move(e);
  return out;
}

}  // namespace

Line parse_event_line(std::string_view line, bool& in_error_event) {
  if (line.empty()) {  // the event's end
    in_error_event = false;
    return {};
  }
  if (line.starts_with("event:")) {
    line.remove_prefix(6);
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    in_error_event = line == "error";
    return {};
  }
  if (line.starts_with("error:")) return stream_error(line.substr(6));
  if (in_error_event && line.starts_with("data:")) return stream_error(line.substr(5));
  return {};  // a comment (": keep-alive"), id:, retry:, or a line of nothing we know
}

std::vector<std::string> parse_models(const std::string& body) {
  std::vector<std::string> out;
  auto v = jsonio::read_object(body);
  if (!v) return out;
  auto* data = v->if_contains("data");
  if (!data || !data->is_array()) return out;
  for (auto& m : data->as_array())
    if (m.is_object())
      if (auto* id = m.as_object().if_contains("id"); id && id->is_string()) out.emplace_back(id->as_string());
  return out;
}

std::string one_line(std::string_view text, std::size_t max_bytes) {
  std::string flat;  // a few bytes past the cut at most: enough to know it was cut
  bool cut = false;
  for (const char c : text) {
    if (flat.size() > max_bytes + 4) {
      cut = true;
      break;
    }
    if (c == '\r' || c == '\n' || c == '\t') {
      if (!flat.empty() && flat.back() != ' ') flat += ' ';
    } else {
      flat += c;
    }
  }
  while (!flat.empty() && flat.back() == ' ') flat.pop_back();
  std::string out = core::valid_utf8(flat, max_bytes);
  if (cut || out.size() < core::valid_utf8(flat).size()) out += "\u2026";
  return out;
}

std::string error_message(const std::string& body) {
  if (auto v = jsonio::read_object(body))
    if (auto m = message_in(*v)) return one_line(*m);
  // Not a model server's JSON error (a proxy's or a web server's page): its first line, as text.
  auto start = body.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "an empty answer";
  if (body[start] == '<') return "a web page instead of an answer";
  std::string_view first(body);
  first = first.substr(start, first.find_first_of("\r\n", start) - start);
  return core::valid_utf8(first, 200);
}

}  // namespace leuria::llm
