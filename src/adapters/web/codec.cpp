#include "adapters/web/codec.hpp"

#include <boost/json.hpp>

#include "json/read.hpp"
#include "json/write.hpp"

namespace leuria::web {

namespace json = boost::json;

http::Response json_response(unsigned status, const json::value& body) { return http::json_response(status, body); }

http::Response error_response(unsigned status, std::string_view message, std::string_view code) {
  json::object o;
  o["error"] = message;
  if (!code.empty()) o["code"] = code;
  return json_response(status, o);
}

http::Response silent_response() {
  http::Response r;
  r.status = 403;
  return r;
}

boost::system::result<json::object, http::Response> parse_body(const http::Request& req, std::size_t max_bytes) {
  if (req.body.size() > max_bytes) return error_response(413, "Request body too large");
  auto first = req.body.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return json::object{};
  // The spec fixes the words; the reason (depth, a repeated key, UTF-8) stays out of the answer.
  auto body = jsonio::read_object(req.body);
  if (!body) return error_response(400, "Invalid JSON body");
  return std::move(*body);
}

namespace {

std::optional<std::string> string_field(const json::object& o, std::string_view key) {
  if (auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

// true, 1, "1" and "true" are a set flag (links carry needs as query words).
bool flag(const json::value* v) {
  if (!v) return false;
  if (v->is_bool()) return v->as_bool();
  if (v->is_int64()) return v->as_int64() == 1;
  if (v->is_uint64()) return v->as_uint64() == 1;
  if (v->is_string()) return v->as_string() == "1" || v->as_string() == "true";
  return false;
}

std::optional<std::uint32_t> context_tokens(const json::value* v) {
  if (!v) return std::nullopt;
  std::int64_t n = 0;
  if (v->is_int64()) n = v->as_int64();
  else if (v->is_uint64()) n = v->as_uint64() > core::kMaxContextTokens ? -1 : static_cast<std::int64_t>(v->as_uint64());
  else if (v->is_double()) {
    double d = v->as_double();
    if (d != static_cast<double>(static_cast<std::int64_t>(d))) return std::nullopt;
    n = static_cast<std::int64_t>(d);
  } else if (v->is_string()) {
    const auto& s = v->as_string();
    if (s.empty() || s.size() > 10) return std::nullopt;
    for (char c : s)
      if (c < '0' || c > '9') return std::nullopt;
    n = std::stoll(std::string(s));
  } else {
    return std::nullopt;
  }
  if (n <= 0 || n > core::kMaxContextTokens) return std::nullopt;
  return static_cast<std::uint32_t>(n);
}

}  // namespace

core::Needs parse_needs(const json::value* v) {
  core::Needs n;
  if (!v || !v->is_object()) return n;
  const auto& o = v->as_object();
  n.tools = flag(o.if_contains("tools"));
  n.images = flag(o.if_contains("images"));
  if (auto e = string_field(o, "effort")) n.effort = core::parse_effort(*e);
  n.context = context_tokens(o.if_contains("context"));
  return n;
}

ClaimBody parse_claim(const json::object& body) {
  ClaimBody c;
  if (auto* n = body.if_contains("nonce"); n && !n->is_null())
    c.nonce = n->is_string() ? std::string(n->as_string()) : std::string();
  c.app = string_field(body, "app");
  c.needs = parse_needs(body.if_contains("needs"));
  return c;
}

LinkBody parse_link(const json::object& body) {
  LinkBody l;
  l.origin = string_field(body, "origin");
  l.rest = parse_claim(body);
  return l;
}

std::optional<bool> parse_allow(const json::object& body) {
  if (auto* a = body.if_contains("allow"); a && a->is_bool()) return a->as_bool();
  return std::nullopt;
}

boost::system::result<EmbedBody, http::Response> parse_embed(json::object& body) {
  EmbedBody out;
  auto* texts = body.if_contains("texts");
  if (!texts || !texts->is_array()) return error_response(400, "texts must be a list of strings");
  auto& list = texts->as_array();
  if (list.size() > core::kMaxEmbedTexts)
    return error_response(400, "At most " + std::to_string(core::kMaxEmbedTexts) + " texts per request, not " +
                                   std::to_string(list.size()));
  out.texts.reserve(list.size());
  for (std::size_t i = 0; i < list.size(); ++i) {
    if (!list[i].is_string()) return error_response(400, "texts[" + std::to_string(i) + "] is not a string");
    out.texts.emplace_back(list[i].as_string());
  }
  if (auto* kind = body.if_contains("kind"); kind && !kind->is_null()) {
    if (kind->is_string() && kind->as_string() == "query") out.kind = core::EmbedKind::query;
    else if (!(kind->is_string() && kind->as_string() == "document"))
      return error_response(400, "kind must be \"query\" or \"document\"");
  }
  return out;
}

json::object encode_embedding(const core::Embedding& e) {
  json::array vectors;
  vectors.reserve(e.vectors.size());
  for (const auto& v : e.vectors) {
    json::array a;
    a.reserve(v.size());
    for (double x : v) a.emplace_back(x);
    vectors.emplace_back(std::move(a));
  }
  return json::object{{"model", e.model}, {"vectors", std::move(vectors)}};
}

http::Response health_response(const HealthView& h) {
  std::string body = "{\"leuria\":";
  body.reserve(128 + h.version.size() + h.agent.size() + (h.embed ? h.embed->size() : 0));
  jsonio::append_string(body, h.version);
  body += ",\"ok\":true,\"agent\":";
  jsonio::append_string(body, h.agent);
  body += h.approvals_in_app ? ",\"approvals\":\"app\"" : ",\"approvals\":\"page\"";
  if (h.paired) body += *h.paired ? ",\"paired\":true" : ",\"paired\":false";
  if (h.embed) {
    body += ",\"embed\":";
    jsonio::append_string(body, *h.embed);
  }
  body += '}';
  return http::json_text_response(200, std::move(body));
}

json::object encode_needs(const core::Needs& n) {
  json::object o;
  if (n.tools) o["tools"] = true;
  if (n.images) o["images"] = true;
  if (n.effort) o["effort"] = core::effort_word(*n.effort);
  if (n.context) o["context"] = *n.context;
  return o;
}

json::object encode_claim(const core::ClaimAnswer& a) {
  json::object o;
  switch (a.status) {
    case core::ClaimAnswer::Status::pending: o["status"] = "pending"; break;
    case core::ClaimAnswer::Status::denied: o["status"] = "denied"; break;
    case core::ClaimAnswer::Status::allowed:
      o["status"] = "allowed";
      o["token"] = a.token;
      break;
  }
  return o;
}

json::object encode_request(const core::PairingView& r) {
  json::object o;
  o["requestId"] = r.id;
  o["origin"] = r.origin;
  if (r.app) o["app"] = *r.app;
  if (!r.needs.empty()) o["needs"] = encode_needs(r.needs);
  o["createdAt"] = r.created_at;
  return o;
}

std::string_view state_word(core::PairingView::State s) {
  switch (s) {
    case core::PairingView::State::pending: return "pending";
    case core::PairingView::State::allowed: return "allowed";
    case core::PairingView::State::denied: return "denied";
    case core::PairingView::State::expired: return "expired";
  }
  return "pending";
}

std::string_view decision_word(core::Decision d) {
  switch (d) {
    case core::Decision::allowed: return "allowed";
    case core::Decision::denied: return "denied";
    case core::Decision::expired: return "expired";
  }
  return "expired";
}

json::object encode_request_state(const core::PairingView& r) {
  json::object o;
  o["status"] = state_word(r.state);
  o["origin"] = r.origin;
  if (r.app) o["app"] = *r.app;
  if (!r.needs.empty()) o["needs"] = encode_needs(r.needs);
  return o;
}

http::Response pairing_error(core::PairingError e) {
  using E = core::PairingError;
  switch (e) {
    case E::nonce_missing: return error_response(400, "A nonce is required");
    case E::nonce_invalid: return error_response(400, "Invalid nonce: use 22 to 128 characters of A-Z a-z 0-9 _ -");
    case E::not_web_origin: return error_response(400, "Pairing must come from a web page");
    case E::cooling_down:
      return error_response(429, "The visitor declined this site less than 30 seconds ago; try again later");
    case E::too_many: return error_response(429, "Too many pending pairing requests; try again later");
    case E::unknown: return error_response(404, "Unknown pairing request");
    case E::caller_gone: return error_response(400, "The claim's connection closed before its answer");
    case E::expired: return error_response(410, "The pairing request expired before the visitor decided");
    case E::already_decided: return error_response(410, "The pairing request was already decided");
    case E::not_saved:
      return error_response(503,
                            "Leuria could not save this connection to disk, so the site is not connected. Check that "
                            "the disk has free space, then try again.",
                            "not_saved");
  }
  return error_response(500, "Unexpected engine error");
}

}  // namespace leuria::web
