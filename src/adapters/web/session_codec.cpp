#include "adapters/web/session_codec.hpp"

#include <boost/json.hpp>

#include "adapters/web/codec.hpp"
#include "core/random.hpp"
#include "json/write.hpp"

namespace leuria::web {

namespace json = boost::json;

std::string webmcp_url(std::uint16_t port) { return "http://127.0.0.1:" + std::to_string(port); }

std::string registration_token(std::uint16_t port, const std::string& secret) {
  json::object o{{"server", "ws://127.0.0.1:" + std::to_string(port)}, {"token", secret}};
  return core::base64(json::serialize(o));
}

namespace {

http::Response bad(std::string message) { return error_response(400, message); }

// Standard base64, padded (what btoa, FileReader and every language's encoder give): an image that
// isn't would reach the AI as garbage, and its model server or agent would fail the whole turn.
bool is_base64(std::string_view s) {
  if (s.size() % 4 != 0) return false;
  std::size_t end = s.size();
  for (int pad = 0; pad < 2 && end > 0 && s[end - 1] == '='; ++pad) --end;
  for (std::size_t i = 0; i < end; ++i) {
    const char c = s[i];
    const bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '+' || c == '/';
    if (!ok) return false;
  }
  return true;
}

boost::system::result<std::vector<core::Attachment>, http::Response> parse_attachments(const json::object& body) {
  std::vector<core::Attachment> out;
  const json::value* v = body.if_contains("attachments");
  if (!v || v->is_null()) return out;
  if (!v->is_array()) return bad("attachments must be an array");
  const auto& list = v->as_array();
  if (list.size() > core::kMaxAttachments)
    return bad("Too many attachments: at most " + std::to_string(core::kMaxAttachments) + " per request");
  for (std::size_t i = 0; i < list.size(); ++i) {
    const std::string where = "attachments[" + std::to_string(i) + "]";
    if (!list[i].is_object()) return bad(where + " must be an object");
    const auto& a = list[i].as_object();
    auto str = [&](std::string_view key) -> const json::string* {
      auto* f = a.if_contains(key);
      return f && f->is_string() ? &f->as_string() : nullptr;
    };
    core::Attachment att;
    if (auto* name = str("name")) att.name = std::string(*name);
    auto* type = str("type");
    if (type && *type == "image") {
      auto* mime = str("mimeType");
      auto* data = str("data");
      if (!mime || !mime->starts_with("image/")) return bad(where + ": an image needs a mimeType image/…");
      if (!data || data->empty()) return bad(where + ": an image needs its data in base64");
      if (data->starts_with("data:"))
        return bad(where + ": send the image's base64 alone, without the \"data:…;base64,\" in front");
      if (!is_base64(*data)) return bad(where + ": the image's data is not base64 (A-Z, a-z, 0-9, + and /, padded with =)");
      att.type = core::Attachment::Type::image;
      att.mime_type = std::string(*mime);
      att.data = std::string(*data);
    } else if (type && *type == "text") {
      auto* text = str("text");
      if (!text) return bad(where + ": a text attachment needs text");
      att.type = core::Attachment::Type::text;
      att.text = std::string(*text);
      if (auto* mime = str("mimeType")) att.mime_type = std::string(*mime);
    } else {
      return bad(where + ": type must be \"image\" or \"text\"");
    }
    out.push_back(std::move(att));
  }
  return out;
}

}  // namespace

boost::system::result<core::PrepareRequest, http::Response> parse_prepare(const json::object& body) {
  core::PrepareRequest r;
  if (auto* p = body.if_contains("prompt"); p && !p->is_null()) {
    if (!p->is_string() || p->as_string().empty()) return bad("prompt must be a non-empty string");
    r.prompt = std::string(p->as_string());
  }
  if (auto* sp = body.if_contains("systemPrompt"); sp && !sp->is_null()) {
    if (!sp->is_string()) return bad("systemPrompt must be a string");
    r.system_prompt = std::string(sp->as_string());
  }
  if (auto* mt = body.if_contains("maxTurns"); mt && !mt->is_null()) {
    if (!mt->is_number()) return bad("maxTurns must be a number");
    double d = mt->to_number<double>();
    r.max_turns = d < 1 ? 1 : d > 50 ? 50 : static_cast<int>(d);
  }
  auto attachments = parse_attachments(body);
  if (!attachments) return attachments.error();
  // Attachments go with a prompt; kept for a later one they would be silently dropped or sent with text
  // they weren't meant for.
  if (!attachments->empty() && !r.prompt) return bad("attachments need a prompt: send them with it");
  r.attachments = std::move(*attachments);
  return r;
}

boost::system::result<PromptBody, http::Response> parse_prompt(const json::object& body) {
  auto* p = body.if_contains("prompt");
  if (!p || !p->is_string() || p->as_string().empty()) return bad("prompt must be a non-empty string");
  auto attachments = parse_attachments(body);
  if (!attachments) return attachments.error();
  return PromptBody{std::string(p->as_string()), std::move(*attachments)};
}

json::object encode_session(const core::Session& s, std::uint16_t port) {
  json::object o;
  o["id"] = s.id();
  o["status"] = core::status_word(s.status());
  o["origin"] = s.origin().empty() ? json::value(nullptr) : json::value(s.origin());
  o["createdAt"] = s.created_at();
  if (s.error()) o["error"] = *s.error();
  o["registrationToken"] = registration_token(port, s.registration_secret());
  o["webmcpUrl"] = webmcp_url(port);
  return o;
}

json::object encode_action(const core::Session& s) {
  return json::object{{"sessionId", s.id()}, {"status", core::status_word(s.status())}};
}

namespace {

std::string_view event_name(core::EventKind k) {
  using K = core::EventKind;
  switch (k) {
    case K::webmcp_ready: return "webmcp_ready";
    case K::ready: return "ready";
    case K::turn_start: return "turn_start";
    case K::chunk: return "chunk";
    case K::thought: return "thought";
    case K::tool_call: return "tool_call";
    case K::permission: return "permission";
    case K::log: return "log";
    case K::turn_completed: return "turn_completed";
    case K::completed: return "completed";
    case K::cancelled: return "cancelled";
    case K::failed: return "failed";
  }
  return "log";
}

// The data of an event that isn't text (encode_sse writes a text event's string itself).
json::value event_data(const core::Event& e, const core::Session& s, std::uint16_t port) {
  using K = core::EventKind;
  switch (e.kind) {
    case K::webmcp_ready:
      return json::object{{"registrationToken", registration_token(port, s.registration_secret())},
                          {"webmcpUrl", webmcp_url(port)}};
    case K::tool_call: {
      const auto& call = e.tool_call();
      json::object o{{"toolCallId", call.id}};
      if (call.title) o["title"] = *call.title;
      if (call.kind) o["kind"] = *call.kind;
      if (call.status) o["status"] = *call.status;
      if (call.tool_name) o["toolName"] = *call.tool_name;
      return o;
    }
    case K::permission:
      return json::object{{"toolName", e.permission().tool_name}, {"allow", e.permission().allow}};
    case K::turn_completed:
      return json::object{{"text", e.turn().text}, {"durationMs", e.turn().duration_ms}};
    default:
      return nullptr;
  }
}

}  // namespace

namespace {

bool is_text_event(core::EventKind k) {
  using K = core::EventKind;
  return k == K::chunk || k == K::thought || k == K::log || k == K::failed;
}

}  // namespace

void append_text_sse(std::string& out, const core::Event& e) {
  // boost::json escapes control characters, so the data is always one line.
  const std::string_view name = event_name(e.kind);
  out.reserve(out.size() + name.size() + e.text.size() + 24);
  out += "event: ";
  out += name;
  out += "\ndata: ";
  jsonio::append_string(out, e.text);
  out += "\n\n";
}

void append_sse(std::string& out, const core::Event& e, const core::Session& s, std::uint16_t port) {
  if (is_text_event(e.kind)) return append_text_sse(out, e);
  const std::string_view name = event_name(e.kind);
  out += "event: ";
  out += name;
  out += "\ndata: ";
  out += json::serialize(event_data(e, s, port));
  out += "\n\n";
}

std::string encode_sse(const core::Event& e, const core::Session& s, std::uint16_t port) {
  std::string out;
  append_sse(out, e, s, port);
  return out;
}

http::Response session_error(const core::SessionError& e) {
  return error_response(e.kind == core::SessionError::Kind::not_found ? 404 : 400, e.message);
}

}  // namespace leuria::web
