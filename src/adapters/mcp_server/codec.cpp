#include "adapters/mcp_server/codec.hpp"

#include <array>
#include <boost/json.hpp>

#include "json/read.hpp"

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
std::optional<NamedCall> named(const json::value& params, std::string_view key, std::string_view args_key) {
  auto name = str(field(params, key));
  if (!name || name->empty()) return std::nullopt;
  NamedCall c{*name, "{}"};
  if (auto* a = field(params, args_key); a && a->is_object()) c.arguments_json = json::serialize(*a);
  return c;
}
}  // namespace

std::optional<NamedCall> parse_tool_call(const json::value& p) { return named(p, "name", "arguments"); }
std::optional<NamedCall> parse_resource_read(const json::value& p) { return named(p, "uri", "-"); }
std::optional<NamedCall> parse_prompt_get(const json::value& p) { return named(p, "name", "arguments"); }

json::value tool_result(const core::PageAnswer& a) {
  return json::object{{"content", json::array{json::object{{"type", "text"}, {"text", a.text}}}}, {"isError", false}};
}

json::value resource_result(const std::string& uri, const core::PageAnswer& a) {
  json::value r = parse_or(a.json, nullptr);
  if (field(r, "contents")) return r;  // already an MCP result
  return json::object{{"contents", json::array{json::object{{"uri", uri}, {"text", a.text}}}}};
}

json::value prompt_result(const core::PageAnswer& a) {
  json::value r = parse_or(a.json, nullptr);
  if (field(r, "messages")) return r;  // already an MCP result
  return json::object{
      {"messages", json::array{json::object{{"role", "user"}, {"content", json::object{{"type", "text"}, {"text", a.text}}}}}}};
}

json::value list_changed_notification() {
  return json::object{{"jsonrpc", "2.0"}, {"method", "notifications/tools/list_changed"}};
}

}  // namespace leuria::mcp_server
