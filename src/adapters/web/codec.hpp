// The web door's codec: the only file that knows the page protocol's JSON field names.
// Bodies in, typed structs out; core values in, JSON responses out.
#pragma once
#include <boost/json/object.hpp>
#include <boost/system/result.hpp>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/embeddings.hpp"
#include "core/needs.hpp"
#include "core/pairing.hpp"
#include "http/message.hpp"

namespace leuria::web {

// ---- responses
http::Response json_response(unsigned status, const boost::json::value& body);
http::Response error_response(unsigned status, std::string_view message, std::string_view code = {});
// The answer of silence: 403, empty, nothing else.
http::Response silent_response();

// ---- request bodies
// An empty body is {}. Anything but a JSON object is 400 "Invalid JSON body".
// max_bytes: a route whose body is a few fields (a claim, a decision) refuses more with 413 before
// parsing: a tree of small values takes up to 8 times its text, and the claim is open to any page
// the CLI engine answers.
inline constexpr std::size_t kSmallBody = 64 * 1024;
boost::system::result<boost::json::object, http::Response> parse_body(const http::Request& req,
                                                                    std::size_t max_bytes = SIZE_MAX);

// The closed vocabulary of needs; unknown keys and values are dropped.
core::Needs parse_needs(const boost::json::value* v);

struct ClaimBody {
  std::optional<std::string> nonce;  // "" when present but not a string (then invalid)
  std::optional<std::string> app;
  core::Needs needs;
};
ClaimBody parse_claim(const boost::json::object& body);

struct LinkBody {
  std::optional<std::string> origin;
  ClaimBody rest;
};
LinkBody parse_link(const boost::json::object& body);

// {allow: true|false}; nullopt for anything else.
std::optional<bool> parse_allow(const boost::json::object& body);

// POST /embed {texts, kind?}: at most 256 strings; kind "query" or "document" (the default).
struct EmbedBody {
  std::vector<std::string> texts;
  core::EmbedKind kind = core::EmbedKind::document;
};
boost::system::result<EmbedBody, http::Response> parse_embed(boost::json::object& body);

// ---- encodings
struct HealthView {
  std::string version;
  std::string agent;
  bool approvals_in_app = false;
  std::optional<bool> paired;  // web pages only
  std::optional<std::string> embed;  // the embedding model, for connected pages and local callers
};
// The answer to GET /health, written straight as text: the engine's most frequent answer (every
// page's probe), where building and serializing a tree was a fifth of a request's instructions.
http::Response health_response(const HealthView& h);
// {model, vectors}
boost::json::object encode_embedding(const core::Embedding& e);
boost::json::object encode_needs(const core::Needs& n);
boost::json::object encode_claim(const core::ClaimAnswer& a);
// A request as the admin list and the app's "pairing" line show it.
boost::json::object encode_request(const core::PairingView& r);
boost::json::object encode_request_state(const core::PairingView& r);
std::string_view state_word(core::PairingView::State s);
std::string_view decision_word(core::Decision d);

// The status and message for a pairing error.
http::Response pairing_error(core::PairingError e);

}  // namespace leuria::web
