#include "adapters/web/webmcp_codec.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "core/random.hpp"
#include "json/read.hpp"
#include "json/scan.hpp"
#include "json/write.hpp"

namespace leuria::web {

namespace json = boost::json;

namespace {

std::string str(const json::object& o, std::string_view key) {
  if (auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return {};
}


// A page's result: a string as is, anything else as JSON text.
core::PageAnswer answer_of(const json::object& o) {
  core::PageAnswer a;
  if (auto* err = o.if_contains("error"); err && !err->is_null()) {
    a.status = core::PageAnswer::Status::failed;
    if (err->is_string()) a.text = std::string(err->as_string());
    else if (err->is_object() && err->as_object().contains("message") && err->as_object().at("message").is_string())
      a.text = std::string(err->as_object().at("message").as_string());
    else a.text = json::serialize(*err);
    if (a.text.empty()) a.text = "The page reported an error";
    return a;
  }
  const json::value* r = o.if_contains("result");
  json::value result = r ? *r : json::value(nullptr);
  a.json = json::serialize(result);
  a.text = result.is_string() ? std::string(result.as_string()) : a.json;
  return a;
}

// A tool's input schema as every agent takes it. MCP SDK clients (Claude Code, Gemini CLI) check the
// whole tools/list answer against their Tool schema, so one tool whose schema they reject hides all
// of the page's tools; OpenAI-style model servers refuse a `parameters` that is no object schema. So
// a schema is made whole here (no `type`: "object", as the spec's default is) or refused, with a
// message the page's author can act on, never passed on as it came.
struct Refusal {
  std::string message;
};
boost::system::result<std::string, Refusal> input_schema(const json::value* schema) {
  using Schema = boost::system::result<std::string, Refusal>;
  if (!schema || schema->is_null())
    return Schema(boost::system::in_place_value, json::serialize(json::object{{"type", "object"}, {"properties", json::object{}}}));
  if (!schema->is_object()) return Refusal{"inputSchema must be an object schema"};
  const json::object& s = schema->as_object();
  const json::value* type = s.if_contains("type");
  if (type && !(type->is_string() && type->as_string() == "object")) return Refusal{"inputSchema must be an object schema: its type must be \"object\""};
  if (const json::value* props = s.if_contains("properties")) {
    const bool schemas = props->is_object() && std::all_of(props->as_object().begin(), props->as_object().end(),
                                                           [](const json::key_value_pair& p) { return p.value().is_object(); });
    if (!schemas) return Refusal{"inputSchema properties must be an object whose values are schemas (objects)"};
  }
  if (const json::value* req = s.if_contains("required")) {
    const bool names = req->is_array() && std::all_of(req->as_array().begin(), req->as_array().end(),
                                                      [](const json::value& v) { return v.is_string(); });
    if (!names) return Refusal{"inputSchema required must be an array of property names"};
  }
  if (type) return Schema(boost::system::in_place_value, json::serialize(s));
  json::object whole{{"type", "object"}};  // `type` first, as a person would write it
  for (const auto& p : s) whole.emplace(p.key(), p.value());
  return Schema(boost::system::in_place_value, json::serialize(whole));
}

// The annotations MCP defines, of the types it defines: an SDK client refuses the whole tool list for
// a hint that is not a boolean. Anything else the page sent is dropped; nothing left, no annotations.
std::string annotations(const json::object& given) {
  json::object kept;
  if (auto* title = given.if_contains("title"); title && title->is_string()) kept["title"] = *title;
  for (std::string_view hint : {"readOnlyHint", "destructiveHint", "idempotentHint", "openWorldHint"})
    if (auto* v = given.if_contains(hint); v && v->is_bool()) kept[hint] = *v;
  return kept.empty() ? std::string() : json::serialize(kept);
}

// A prompt's arguments as MCP's PromptArgument has them ({name, description?, required?}), for the
// same reason: an entry without a string name is dropped, and so is a member of another type.
std::string prompt_arguments(const json::array& given) {
  json::array kept;
  for (const json::value& a : given) {
    if (!a.is_object()) continue;
    const json::object& o = a.as_object();
    const json::value* name = o.if_contains("name");
    if (!name || !name->is_string()) continue;
    json::object arg{{"name", *name}};
    if (auto* d = o.if_contains("description"); d && d->is_string()) arg["description"] = *d;
    if (auto* r = o.if_contains("required"); r && r->is_bool()) arg["required"] = *r;
    kept.push_back(std::move(arg));
  }
  return json::serialize(kept);
}

}  // namespace

boost::system::result<std::string, RegisterRefusal> parse_register(std::string_view text) {
  auto o = jsonio::read_object(text);
  if (!o) return RegisterRefusal{"Invalid JSON"};  // the original engine's words, which pages may match
  if (str(*o, "type") != "register") return RegisterRefusal{"Expected register message"};
  std::string token = str(*o, "token");
  if (token.empty()) return RegisterRefusal{"Invalid registration token"};
  // The blob: base64 of {"server":…,"token":…}; else the inner token itself.
  if (auto decoded = core::base64_decode(token)) {
    if (auto inner = jsonio::read_object(*decoded)) {
      std::string t = str(*inner, "token");
      if (!t.empty()) return {boost::system::in_place_value, std::move(t)};
    }
  }
  return {boost::system::in_place_value, std::move(token)};
}

std::string encode_register_success(const std::string& channel_path, const std::string& channel_token) {
  return json::serialize(json::object{{"type", "registerSuccess"}, {"channel", channel_path}, {"token", channel_token}});
}

std::string encode_error(std::string_view message) {
  return json::serialize(json::object{{"type", "error"}, {"message", message}});
}

PageMessage parse_page_message_tree(std::string_view text) {
  auto parsed = jsonio::read_object(text);
  if (!parsed) return Invalid{"Invalid JSON"};
  const json::object& o = *parsed;
  const std::string type = str(o, "type");
  if (type == "registerTool") {
    const json::object* t = &o;
    if (auto* nested = o.if_contains("tool"); nested && nested->is_object()) t = &nested->as_object();
    RegisterTool r;
    r.spec.name = str(*t, "name");
    r.spec.description = str(*t, "description");
    auto schema = input_schema(t->if_contains("inputSchema"));
    if (!schema) return Invalid{std::move(schema.error().message)};
    r.spec.input_schema_json = std::move(*schema);
    if (auto* ann = t->if_contains("annotations"); ann && ann->is_object()) r.annotations_json = annotations(ann->as_object());
    return r;
  }
  if (type == "deregisterTool") return DeregisterTool{str(o, "name")};
  if (type == "registerResource") {
    RegisterResource r{{str(o, "uri"), str(o, "name"), str(o, "description"), str(o, "mimeType")}};
    if (r.spec.uri.empty()) return Invalid{"A resource needs a uri"};
    return r;
  }
  if (type == "registerPrompt") {
    RegisterPrompt r;
    r.spec.name = str(o, "name");
    r.spec.description = str(o, "description");
    if (auto* args = o.if_contains("arguments"); args && args->is_array())
      r.spec.arguments_json = prompt_arguments(args->as_array());
    if (r.spec.name.empty()) return Invalid{"A prompt needs a name"};
    return r;
  }
  if (type == "toolResponse" || type == "resourceResponse" || type == "promptResponse") {
    std::string id = str(o, "id");
    if (id.empty()) return Invalid{"A response needs the id of its call"};
    return PageResponse{std::move(id), answer_of(o)};
  }
  if (type == "ping") return Ping{};
  if (type == "pong") return Pong{};
  return Invalid{type.empty() ? "A message needs a type" : "Unknown message type: " + type};
}

namespace {

// What a page's answers and pings need of a message, read by jsonio::scan: the type, the id, and the
// result when it is a string. A tree per message was about 2,000 instructions of a ping's 14,600, and
// 4,500 of a tool call's answer (bench scenarios 6 and 4, callgrind).
struct PageFields {
  enum class Result { absent, string, other };
  bool object = false;
  bool error = false;  // an "error" member, of any value: read as a tree (rare)
  Result result = Result::absent;
  std::string type, id, result_text;

  void member(const jsonio::Path& p) {
    if (p.top("result")) result = Result::other;
    else if (p.top("error")) error = true;
  }
  void begin(const jsonio::Path& p, bool is_array) {
    if (p.depth() == 0) object = !is_array;
    else member(p);
  }
  void end(const jsonio::Path&, bool, std::size_t) {}
  bool wants_string(const jsonio::Path& p) {
    if (p.top("error")) error = true;
    return p.top("type") || p.top("id") || p.top("result");
  }
  void string(const jsonio::Path& p, std::string s) {
    if (p.at(0, "type")) type = std::move(s);
    else if (p.at(0, "id")) id = std::move(s);
    else {
      result = Result::string;
      result_text = std::move(s);
    }
  }
  void integer(const jsonio::Path& p, std::int64_t) { member(p); }
  void other(const jsonio::Path& p) { member(p); }
};

bool is_response(std::string_view type) {
  return type == "toolResponse" || type == "resourceResponse" || type == "promptResponse";
}

}  // namespace

// Pings, pongs and answers without an error are read by the scan, their result passed on as the page
// wrote it; registrations and errors (once per tool, or rare) as a tree.
PageMessage parse_page_message(std::string_view text) {
  PageFields f;
  if (!jsonio::scan(text, f) || !f.object) return Invalid{"Invalid JSON"};
  if (f.type == "ping") return Ping{};
  if (f.type == "pong") return Pong{};
  if (!is_response(f.type) || f.error) return parse_page_message_tree(text);
  if (f.id.empty()) return Invalid{"A response needs the id of its call"};
  core::PageAnswer a;
  if (f.result == PageFields::Result::string) {
    jsonio::append_string(a.json, f.result_text);
    a.text = std::move(f.result_text);
  } else if (f.result == PageFields::Result::absent) {
    a.json = a.text = "null";
  } else {
    auto written = jsonio::member_text(text, "result");
    if (!written) return parse_page_message_tree(text);
    a.json = a.text = *written;
  }
  return PageResponse{std::move(f.id), std::move(a)};
}

std::string encode_ack(std::string_view registration, std::string_view name) {
  return json::serialize(json::object{{"type", "ack"}, {"registration", registration}, {"name", name}});
}
std::string encode_pong() { return R"({"type":"pong"})"; }
std::string encode_ping() { return R"({"type":"ping"})"; }

// Built as text, the arguments passed on as the AI wrote them when read() would take them, else {}
// (a last guard: MCP's are objects already, and the in-process model's broken ones are refused before,
// by arguments_refusal): reading them into a tree to serialize it again was 6,500 instructions, 7% of a
// tool call (bench scenario 4, callgrind).
std::string encode_call(const core::PageCall& c) {
  using K = core::PageCall::Kind;
  std::string_view type = "callTool", key = "tool";
  if (c.kind == K::resource) {
    type = "readResource";
    key = "uri";
  } else if (c.kind == K::prompt) {
    type = "getPrompt";
    key = "name";
  }
  std::string out;
  out.reserve(c.id.size() + c.name.size() + c.arguments_json.size() + 56);
  out += R"({"type":")";
  out += type;
  out += R"(","id":)";
  jsonio::append_string(out, c.id);
  out += R"(,")";
  out += key;
  out += R"(":)";
  jsonio::append_string(out, c.name);
  if (c.kind != K::resource) {
    out += R"(,"arguments":)";
    if (jsonio::valid(c.arguments_json)) out += c.arguments_json;
    else out += "{}";
  }
  out += '}';
  return out;
}

std::optional<std::string> arguments_refusal(std::string_view arguments_json) {
  constexpr std::string_view again = ". Call the tool again with its arguments as one JSON object.";
  if (jsonio::valid(arguments_json)) {  // no tree for the usual case: valid, and an object if it starts as one
    const auto first = arguments_json.find_first_not_of(" \t\r\n");
    if (first != std::string_view::npos && arguments_json[first] == '{') return std::nullopt;
    return "Your arguments were not a JSON object" + std::string(again);
  }
  auto read = jsonio::read(arguments_json);
  std::string why = read ? "it is not one JSON value" : read.error().message;
  return "Your arguments were not valid JSON: " + why + std::string(again);
}

}  // namespace leuria::web
