#include "adapters/mcp_server/codec.hpp"

#include <array>
#include <boost/json.hpp>

#include "json/read.hpp"
#include "json/scan.hpp"
#include "json/write.hpp"

namespace leuria::mcp_server {

namespace json = boost::json;

namespace {

constexpr std::array<std::string_view, 3> kVersions{"2024-11-05", "2025-03-26", "2025-06-18"};

json::value parse_or(const std::string& text, json::value fallback) {
  if (text.empty()) return fallback;
  auto v = jsonio::read(text);
  if (!v) return fallback;
  return std::move(*v);
}

const json::value* field(const json::value& v, std::string_view k) {
  return v.is_object() ? v.as_object().if_contains(k) : nullptr;
}

std::optional<std::string> str(const json::value* v) {
  if (v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

}  // namespace

std::string negotiate_version(const json::value& params) {
  auto asked = str(field(params, "protocolVersion"));
  for (auto v : kVersions)
    if (asked && *asked == v) return *asked;
  return kLatestVersion;
}

bool speaks_version(std::string_view header) {
  for (auto v : kVersions)
    if (header == v) return true;
  return false;
}

std::string unsupported_version(std::string_view header) {
  std::string s = "Unsupported MCP-Protocol-Version: ";
  for (unsigned char c : header.substr(0, 64)) s += c >= 0x20 && c < 0x7f ? static_cast<char>(c) : '?';  // text only
  s += " (this server speaks";
  for (auto v : kVersions) (s += ' ') += v;
  s += ')';
  return s;
}

json::value initialize_result(const std::string& version, const std::string& engine_version) {
  return json::object{
      {"protocolVersion", version},
      {"capabilities",
       json::object{{"tools", json::object{{"listChanged", true}}}, {"resources", json::object{}}, {"prompts", json::object{}}}},
      {"serverInfo", json::object{{"name", "webmcp"}, {"title", "This page's tools"}, {"version", engine_version}}},
      {"instructions", "Tools offered by the web page the visitor is using. Their answers come from the page."},
  };
}

json::value tools_list(const core::PageTools& tools) {
  json::array list;
  for (auto& d : tools.declared_tools()) {
    json::object t{{"name", d.spec.name},
                   {"description", d.spec.description},
                   {"inputSchema", parse_or(d.spec.input_schema_json, json::object{{"type", "object"}})}};
    if (!d.annotations_json.empty()) t["annotations"] = parse_or(d.annotations_json, json::object{});
    list.push_back(std::move(t));
  }
  return json::object{{"tools", std::move(list)}};
}

json::value resources_list(const core::PageTools& tools) {
  json::array list;
  for (auto& r : tools.resources()) {
    json::object o{{"uri", r.uri}, {"name", r.name.empty() ? r.uri : r.name}};
    if (!r.description.empty()) o["description"] = r.description;
    if (!r.mime_type.empty()) o["mimeType"] = r.mime_type;
    list.push_back(std::move(o));
  }
  return json::object{{"resources", std::move(list)}};
}

json::value prompts_list(const core::PageTools& tools) {
  json::array list;
  for (auto& p : tools.prompts()) {
    json::object o{{"name", p.name}};
    if (!p.description.empty()) o["description"] = p.description;
    if (!p.arguments_json.empty()) o["arguments"] = parse_or(p.arguments_json, json::array{});
    list.push_back(std::move(o));
  }
  return json::object{{"prompts", std::move(list)}};
}

namespace {
boost::system::result<NamedCall, InvalidParams> named(const json::value& params, std::string_view key,
                                                      std::string_view args_key) {
  auto name = str(field(params, key));
  if (!name || name->empty()) return InvalidParams{"Invalid params"};
  NamedCall c{*name, "{}"};
  if (auto* a = field(params, args_key); a && !a->is_null()) {
    if (!a->is_object()) return InvalidParams{"arguments must be an object"};
    c.arguments_json = json::serialize(*a);
  }
  return c;
}
}  // namespace

boost::system::result<NamedCall, InvalidParams> parse_tool_call(const json::value& p) {
  return named(p, "name", "arguments");
}
boost::system::result<NamedCall, InvalidParams> parse_resource_read(const json::value& p) { return named(p, "uri", "-"); }
boost::system::result<NamedCall, InvalidParams> parse_prompt_get(const json::value& p) {
  return named(p, "name", "arguments");
}

namespace {

// What a tools/call request needs, read by jsonio::scan: the method, the kind of id, params.name and
// whether params.arguments is an object. Anything else the message holds is skipped, not copied.
struct CallFields {
  enum class Id { absent, plain, other };  // plain: a string or an integer
  bool object = false, params_object = false, args = false, args_object = false, odd = false;
  Id id = Id::absent;
  std::string method, name;

  static bool in_params(const jsonio::Path& p, std::string_view key) { return p.depth() == 2 && p.at(0, "params") && p.at(1, key); }
  // A value that starts at `p` and is not a string or an integer.
  void value(const jsonio::Path& p, bool is_object) {
    if (p.top("id")) id = Id::other;
    else if (p.top("params")) params_object = is_object;
    else if (in_params(p, "arguments")) {
      args = true;
      args_object = is_object;
    } else if (p.top("result") || p.top("error")) odd = true;  // a response: read as a tree
  }
  void begin(const jsonio::Path& p, bool is_array) {
    if (p.depth() == 0) object = !is_array;
    else value(p, !is_array);
  }
  void end(const jsonio::Path&, bool, std::size_t) {}
  bool wants_string(const jsonio::Path& p) {
    if (p.top("id")) id = Id::plain;
    else value(p, false);
    return p.top("method") || in_params(p, "name");
  }
  void string(const jsonio::Path& p, std::string s) {
    if (p.depth() == 1) method = std::move(s);
    else name = std::move(s);
  }
  void integer(const jsonio::Path& p, std::int64_t) {
    if (p.top("id")) id = Id::plain;
    else value(p, false);
  }
  void other(const jsonio::Path& p) { value(p, false); }
};

}  // namespace

std::optional<ScannedCall> scan_tool_call(std::string_view body) {
  CallFields f;
  if (!jsonio::scan(body, f) || !f.object || f.odd || f.method != "tools/call" || f.id != CallFields::Id::plain ||
      !f.params_object || f.name.empty() || (f.args && !f.args_object))  // arguments not an object: the tree says why
    return std::nullopt;
  auto id = jsonio::member_text(body, "id");
  auto params = jsonio::member_text(body, "params");
  if (!id || !params) return std::nullopt;
  ScannedCall c{std::string(*id), NamedCall{std::move(f.name), "{}"}};
  if (f.args_object) {
    auto args = jsonio::member_text(*params, "arguments");
    if (!args) return std::nullopt;
    c.call.arguments_json = *args;
  }
  return c;
}

// Built as text: the tree, its serialization and the JSON-RPC envelope's were about 7,000 of a tool
// call's 78,000 instructions (bench scenario 4, callgrind).
std::string tool_result(const core::PageAnswer& a, bool is_error) {
  std::string out;
  out.reserve(a.text.size() + 64);
  out += R"({"content":[{"type":"text","text":)";
  jsonio::append_string(out, a.text);
  out += is_error ? R"(}],"isError":true})" : R"(}],"isError":false})";
  return out;
}

std::string resource_result(const std::string& uri, const core::PageAnswer& a) {
  json::value r = parse_or(a.json, nullptr);
  if (field(r, "contents")) return json::serialize(r);  // already an MCP result
  return json::serialize(json::object{{"contents", json::array{json::object{{"uri", uri}, {"text", a.text}}}}});
}

std::string prompt_result(const core::PageAnswer& a) {
  json::value r = parse_or(a.json, nullptr);
  if (field(r, "messages")) return json::serialize(r);  // already an MCP result
  return json::serialize(json::object{
      {"messages", json::array{json::object{{"role", "user"}, {"content", json::object{{"type", "text"}, {"text", a.text}}}}}}});
}

std::string rpc_result_text(std::string_view id, std::string_view result) {
  std::string out;
  out.reserve(id.size() + result.size() + 32);
  out += R"({"jsonrpc":"2.0","id":)";
  out += id;
  out += R"(,"result":)";
  out += result;
  out += '}';
  return out;
}

std::string rpc_error_text(std::string_view id, int code, std::string_view message) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id;
  out += R"(,"error":{"code":)";
  out += std::to_string(code);
  out += R"(,"message":)";
  jsonio::append_string(out, message);
  out += "}}";
  return out;
}

std::string call_answer(core::PageCall::Kind kind, const std::string& name, std::string_view id,
                        const core::PageAnswer& a) {
  using Status = core::PageAnswer::Status;
  using Kind = core::PageCall::Kind;
  switch (a.status) {
    case Status::answered: break;
    case Status::cancelled: return rpc_error_text(id, kCancelled, a.text);
    case Status::busy: return rpc_error_text(id, kPageError, a.text);
    case Status::not_connected: return rpc_error_text(id, kNotConnected, a.text);
    case Status::failed:
    case Status::timed_out:
    case Status::dropped:
    case Status::ended:
      if (kind == Kind::tool) return rpc_result_text(id, tool_result(a, true));
      return rpc_error_text(id, a.status == Status::dropped ? kNotConnected : kPageError, a.text);
  }
  if (kind == Kind::tool) return rpc_result_text(id, tool_result(a));
  if (kind == Kind::resource) return rpc_result_text(id, resource_result(name, a));
  return rpc_result_text(id, prompt_result(a));
}

MessageKind message_kind(const json::object& message) {
  const json::value* method = message.if_contains("method");
  const bool has_id = message.contains("id");
  if (method && method->is_string()) return has_id ? MessageKind::request : MessageKind::notification;
  if (!method && has_id && (message.contains("result") || message.contains("error"))) return MessageKind::response;
  return MessageKind::invalid;
}

json::value list_changed_notification() {
  return json::object{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}};
}

std::optional<std::string> cancelled_request(const json::object& message) {
  const json::value* method = message.if_contains("method");
  if (!method || *method != "notifications/cancelled" || message.contains("id")) return std::nullopt;
  const json::value* params = message.if_contains("params");
  const json::value* id = params && params->is_object() ? params->as_object().if_contains("requestId") : nullptr;
  if (!id || !(id->is_string() || id->is_number())) return std::nullopt;
  return json::serialize(*id);
}

std::string call_tag(std::string_view mcp_session, std::string_view id_json) {
  std::string tag(mcp_session);
  tag += '\n';  // never in a header's value
  // A string id with escapes, as the client wrote it, in the one form a cancellation's id is written in.
  if (id_json.find('\\') != std::string_view::npos) {
    boost::system::error_code ec;
    const json::value id = json::parse(id_json, ec);
    if (!ec) {
      tag += json::serialize(id);
      return tag;
    }
  }
  tag += id_json;
  return tag;
}

}  // namespace leuria::mcp_server
