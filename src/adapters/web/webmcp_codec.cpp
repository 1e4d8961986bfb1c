#include "adapters/web/webmcp_codec.hpp"

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
    const json::value* schema = t->if_contains("inputSchema");
    r.spec.input_schema_json = schema && schema->is_object()
                                   ? json::serialize(*schema)
                                   : json::serialize(json::object{{"type", "object"}, {"properties", json::object{}}});
    if (auto* ann = t->if_contains("annotations"); ann && ann->is_object()) r.annotations_json = json::serialize(*ann);
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
    if (auto* args = o.if_contains("arguments"); args && args->is_array()) r.spec.arguments_json = json::serialize(*args);
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
// as before: reading them into a tree to serialize it again was 6,500 instructions, 7% of a tool
// call (bench scenario 4, callgrind).
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

}  // namespace leuria::web
