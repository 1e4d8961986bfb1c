// The web door's codec for sessions and their stream: request bodies in, session views and
// server-sent events out. The only place that knows these JSON field names and event names.
#pragma once
#include <boost/json/object.hpp>
#include <boost/system/result.hpp>
#include <cstdint>
#include <string>

#include "core/events.hpp"
#include "core/session.hpp"
#include "http/message.hpp"

namespace leuria::web {

// Where the page's tools connect, as the spec fixes them.
std::string webmcp_url(std::uint16_t port);
// base64 of {"server":"ws://127.0.0.1:<port>","token":<secret>}
std::string registration_token(std::uint16_t port, const std::string& secret);

boost::system::result<core::PrepareRequest, http::Response> parse_prepare(const boost::json::object& body);

struct PromptBody {
  std::string prompt;
  std::vector<core::Attachment> attachments;
};
boost::system::result<PromptBody, http::Response> parse_prompt(const boost::json::object& body);

boost::json::object encode_session(const core::Session& s, std::uint16_t port);
boost::json::object encode_action(const core::Session& s);

// One event, exactly "event: <name>\ndata: <one-line JSON>\n\n".
std::string encode_sse(const core::Event& e, const core::Session& s, std::uint16_t port);
// The same, appended to `out`: a stream's tokens are encoded into one buffer it keeps, not a string each.
void append_sse(std::string& out, const core::Event& e, const core::Session& s, std::uint16_t port);
// The same for a text event (chunk, thought, log, failed), whose data is its text alone: what a
// stream's direct writer encodes, needing nothing of the session (one object fewer touched per token).
void append_text_sse(std::string& out, const core::Event& e);

http::Response session_error(const core::SessionError& e);

}  // namespace leuria::web
