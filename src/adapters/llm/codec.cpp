#include "adapters/llm/codec.hpp"

#include <boost/json.hpp>

#include "core/plain_text.hpp"
#include "json/read.hpp"

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

std::string request_body(const std::string& model, const json::array& messages,
                         const std::vector<core::ToolSpec>& tools, bool forbid_tools) {
  json::object body{{"model", model}, {"messages", messages}, {"stream", true}};
  if (!tools.empty()) {
    json::array list;
    for (auto& t : tools) {
      json::value schema = json::object{{"type", "object"}, {"properties", json::object{}}};
      if (auto declared = jsonio::read_object(t.input_schema_json)) schema = std::move(*declared);
      list.push_back(json::object{
          {"type", "function"},
          {"function", json::object{{"name", t.name}, {"description", t.description}, {"parameters", schema}}}});
    }
    body["tools"] = std::move(list);
    if (forbid_tools) body["tool_choice"] = "none";
  }
  return json::serialize(body);
}

namespace {
std::string text_of(const json::value* v) {
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}
}  // namespace

Line parse_stream_line(std::string_view line) {
  Line out;
  if (!line.starts_with("data:")) return out;
  line.remove_prefix(5);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line == "[DONE]") {
    out.done = true;
    return out;
  }
  // A chunk is read and dropped at once: its values live in a buffer on the stack, not one heap
  // allocation per string and object (the parse was most of a streamed token's cost).
  unsigned char buffer[4096];
  json::monotonic_resource arena(buffer, sizeof buffer);
  auto v = jsonio::read_object(line, json::storage_ptr(&arena));
  if (!v) return out;
  Delta d;
  const auto& o = *v;
  if (auto* err = o.if_contains("error")) {
    d.error = err->is_object() ? text_of(err->as_object().if_contains("message")) : text_of(err);
    if (d.error->empty()) d.error = "The model server reported an error";
    out.delta = std::move(d);
    return out;
  }
  auto* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) {
    out.delta = std::move(d);
    return out;
  }
  const auto& choice = choices->as_array()[0];
  if (!choice.is_object()) return out;
  if (auto* fr = choice.as_object().if_contains("finish_reason"); fr && fr->is_string())
    d.finish_reason = std::string(fr->as_string());
  auto* delta = choice.as_object().if_contains("delta");
  if (delta && delta->is_object()) {
    const auto& dd = delta->as_object();
    d.content = text_of(dd.if_contains("content"));
    d.reasoning = text_of(dd.if_contains("reasoning_content"));
    if (d.reasoning.empty()) d.reasoning = text_of(dd.if_contains("reasoning"));
    if (auto* tcs = dd.if_contains("tool_calls"); tcs && tcs->is_array()) {
      for (auto& tc : tcs->as_array()) {
        if (!tc.is_object()) continue;
        const auto& t = tc.as_object();
        Delta::ToolCallPart part;
        // to_number<int> throws on 1.5 or 1e12, and nothing here may throw: a garbage index drops the part.
        if (auto* i = t.if_contains("index")) {
          if (!i->is_int64() || i->as_int64() < 0 || i->as_int64() >= kMaxToolCalls) continue;
          part.index = static_cast<int>(i->as_int64());
        }
        if (auto* id = t.if_contains("id"); id && id->is_string()) part.id = std::string(id->as_string());
        if (auto* f = t.if_contains("function"); f && f->is_object()) {
          if (auto* n = f->as_object().if_contains("name"); n && n->is_string()) part.name = std::string(n->as_string());
          part.arguments = text_of(f->as_object().if_contains("arguments"));
        }
        d.tool_calls.push_back(std::move(part));
      }
    }
  }
  out.delta = std::move(d);
  return out;
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

std::string error_message(const std::string& body) {
  if (auto v = jsonio::read_object(body)) {
    if (auto* e = v->if_contains("error")) {
      if (e->is_string()) return std::string(e->as_string());
      if (e->is_object())
        if (auto* m = e->as_object().if_contains("message"); m && m->is_string()) return std::string(m->as_string());
    }
  }
  // Not a model server's JSON error (a proxy's or a web server's page): its first line, as text.
  auto start = body.find_first_not_of(" \t\r\n");
  if (start == std::string::npos) return "an empty answer";
  if (body[start] == '<') return "a web page instead of an answer";
  std::string_view first(body);
  first = first.substr(start, first.find_first_of("\r\n", start) - start);
  return core::valid_utf8(first, 200);
}

}  // namespace leuria::llm
