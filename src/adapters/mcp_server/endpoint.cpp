#include "adapters/mcp_server/endpoint.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

#include "adapters/mcp_server/codec.hpp"
#include "core/host.hpp"
#include "core/random.hpp"
#include "json/read.hpp"

namespace leuria::mcp_server {

namespace asio = boost::asio;
namespace json = boost::json;

namespace {

http::Response json_http(unsigned status, const json::value& body) { return http::json_response(status, body); }

http::Response plain_error(unsigned status, std::string_view message) {
  return json_http(status, json::object{{"error", message}});
}

// The JSON-RPC answers post() makes from a tree (everything but a page's call, which codec.cpp's
// call_answer builds as text).
http::Response rpc_result(const json::value& id, const json::value& result) {
  return http::json_text_response(200, rpc_result_text(json::serialize(id), json::serialize(result)));
}

http::Response rpc_error(unsigned status, const json::value& id, int code, std::string_view message) {
  return http::json_text_response(status, rpc_error_text(json::serialize(id), code, message));
}

// MCP 2025-06-18: a request whose MCP-Protocol-Version header names a version this server doesn't
// speak is refused. Clients send the one initialize agreed on, so only a confused one meets this.
std::optional<http::Response> refuse_version(const http::Request& req) {
  auto v = req.header("mcp-protocol-version");
  if (!v || speaks_version(*v)) return std::nullopt;
  return rpc_error(400, nullptr, -32600, unsupported_version(*v));
}

bool accepts_sse(const http::Request& req) {
  auto accept = req.header("accept");
  return accept && accept->find("text/event-stream") != std::string_view::npos;
}

// A call's answer, shared by the request's coroutine and the handler the page's answer runs.
struct CallState {
  explicit CallState(asio::any_io_executor ex) : signal(ex) {}
  asio::steady_timer signal;           // the keep-alive's wait; cancelled when the answer is in
  http::BodyWriter* writer = nullptr;  // while the request's coroutine waits on `signal`
  bool answered = false;
  bool sent = false;  // the writer took the answer from the handler
  std::string body;   // else the answer, for the coroutine to write
};

// Runs as the page's answer is read: the answer goes to the client from there, in one write with
// the body's end (and the head, if no keep-alive went first), when the socket is free. Waking the
// request's coroutine to write it was two trips through the scheduler, each with a poll of the
// reactor (bench scenario 4); the coroutine now only finishes the request.
void on_answer(CallState& state, core::PageCall::Kind kind, const std::string& name, const std::string& id, bool sse,
               const core::PageAnswer& a) {
  // MCP: no response to a cancelled request. An event stream ends without one; a JSON answer, already
  // begun, needs a body, so it says why (the client has dropped the id and ignores it).
  if (sse && a.status == core::PageAnswer::Status::cancelled) {
    state.body.clear();
    state.answered = true;
    if (state.writer) state.sent = state.writer->write_last_now(state.body);
    state.signal.cancel();
    return;
  }
  std::string text = call_answer(kind, name, id, a);
  if (sse) {
    state.body.reserve(text.size() + 24);
    state.body = "event: message\ndata: ";
    state.body += text;
    state.body += "\n\n";
  } else {
    state.body = std::move(text);
  }
  state.answered = true;
  if (state.writer) state.sent = state.writer->write_last_now(state.body);
  state.signal.cancel();
}

// Asks the page and answers the request, writing a keep-alive every `every` meanwhile so clients and
// proxies don't give up on a call the visitor is still answering in the page.
asio::awaitable<void> stream_answer(http::BodyWriter& w, std::shared_ptr<core::PageTools> page,
                                    core::PageCall::Kind kind, NamedCall call, std::string id, std::string tag,
                                    bool sse, std::chrono::milliseconds every) {
  auto state = std::make_shared<CallState>(co_await asio::this_coro::executor);
  state->writer = &w;
  struct Release {  // the writer is this coroutine's caller's: never used once it returns
    CallState& state;
    ~Release() { state.writer = nullptr; }
  } release{*state};
  // The handler holds the state, not the page's tools (they keep the handler).
  const std::string call_id = page->start(kind, call.name, std::move(call.arguments_json),
                                          [state, kind, name = call.name, id, sse](core::PageAnswer a) {
                                            on_answer(*state, kind, name, id, sse, a);
                                          },
                                          tag);
  // No ?: with temporaries in a coroutine (GCC 12 destroys them twice).
  std::string beat = "\n";
  if (sse) beat = ":\n\n";
  while (!state->answered) {
    state->signal.expires_after(every);
    co_await state->signal.async_wait(asio::as_tuple(asio::use_awaitable));
    if (state->answered) break;
    // A co_await never goes inside && or ?: here: GCC 12 miscompiles it.
    const bool written = co_await w.write(beat);
    if (!written) {  // the client went away: its call leaves the page's queue
      page->cancel_call(call_id);
      co_return;
    }
  }
  if (state->sent) {
    co_await w.flush();
    co_return;
  }
  co_await w.write_last(std::move(state->body));
}

// Tells the client when the page's tools change, until the session ends (its end wakes the stream) or
// the client leaves.
asio::awaitable<void> stream_changes(http::BodyWriter& w, std::shared_ptr<core::Session> session,
                                     std::chrono::milliseconds every) {
  auto changes = std::make_shared<int>(0);
  auto signal = std::make_shared<asio::steady_timer>(co_await asio::this_coro::executor);
  std::weak_ptr<int> weak_changes = changes;
  std::weak_ptr<asio::steady_timer> weak_signal = signal;
  session->page_tools().on_tools_changed([weak_changes, weak_signal] {
    auto c = weak_changes.lock();
    auto s = weak_signal.lock();
    if (!c || !s) return false;  // the stream is gone: drop this listener
    ++*c;
    s->cancel();
    return true;
  });
  while (!is_final(session->status())) {
    signal->expires_after(every);
    co_await signal->async_wait(asio::as_tuple(asio::use_awaitable));
    if (is_final(session->status())) break;  // the session's end woke us: the stream ends with it
    std::string out = ":\n\n";
    if (*changes > 0) {
      *changes = 0;
      out = "event: message\ndata: " + json::serialize(list_changed_notification()) + "\n\n";
    }
    if (!co_await w.write(out)) break;
  }
}

}  // namespace

asio::awaitable<http::Response> McpEndpoint::handle(http::Request& req) {
  // Silence first: in app mode a request naming another Host (a rebound page's may look local) gets it too.
  if (silent_ && silent_(req)) {
    http::Response silence;
    silence.status = 403;
    co_return silence;
  }
  auto host = req.header("host");
  if (req.header_count("host") != 1 || !host || !core::host_allowed(*host, port_))
    co_return plain_error(403, "host not allowed");
  // Only the AI calls this, from a process: a page (any Origin) never may.
  if (req.header("origin")) co_return plain_error(403, "Pages can't use this endpoint");
  if (req.refused) {  // the server read the head only: say why, and the connection closes
    http::Response r = plain_error(req.refused, "Request body too large");
    r.close = true;
    co_return r;
  }
  auto session = sessions_.find_by_channel_token(req.bearer());
  if (!session) co_return plain_error(401, "Unauthorized");
  if (req.method == "POST") co_return post(req, session);
  if (req.method == "GET") co_return get(req, session);
  http::Response r = plain_error(405, "Method not allowed");
  r.set("Allow", "GET, POST");
  co_return r;
}

http::Response McpEndpoint::post(http::Request& req, std::shared_ptr<core::Session> session) {
  // A tool call, the one message sent over and over, is read without a tree; the rest as a tree.
  if (auto scanned = scan_tool_call(req.body)) {
    if (auto refused = refuse_version(req)) return std::move(*refused);
    return call(req, *session, core::PageCall::Kind::tool, std::move(scanned->call), std::move(scanned->id_json));
  }
  auto parsed = jsonio::read(req.body);
  if (!parsed) return rpc_error(400, nullptr, -32700, "Parse error: " + parsed.error().message);
  const json::value& msg = *parsed;
  if (!msg.is_object()) return rpc_error(400, nullptr, -32600, "Send one JSON-RPC message per request");
  const auto& o = msg.as_object();
  const json::value id = o.contains("id") ? o.at("id") : json::value(nullptr);
  const MessageKind shape = message_kind(o);
  const bool initialize = shape == MessageKind::request && o.at("method").as_string() == "initialize";
  if (!initialize)  // initialize is where the version is agreed
    if (auto refused = refuse_version(req)) return std::move(*refused);
  if (auto cancelled = cancelled_request(o))  // the call ends now (MCP: the client ignores any answer)
    session->page_tools().cancel(call_tag(req.header("mcp-session-id").value_or(""), *cancelled));
  if (shape == MessageKind::response || shape == MessageKind::notification) {  // accepted, nothing to say
    http::Response r;
    r.status = 202;
    return r;
  }
  if (shape == MessageKind::invalid) return rpc_error(400, id, -32600, "Invalid request");
  const std::string method(o.at("method").as_string());
  const json::value params = o.contains("params") ? o.at("params") : json::value(json::object{});
  core::PageTools& tools = session->page_tools();

  if (method == "initialize") {
    http::Response r = rpc_result(id, initialize_result(negotiate_version(params), version_));
    r.set("Mcp-Session-Id", core::random_base64url(16));
    return r;
  }
  if (method == "ping") return rpc_result(id, json::object{});
  if (method == "tools/list") return rpc_result(id, tools_list(tools));
  if (method == "resources/list") return rpc_result(id, resources_list(tools));
  if (method == "prompts/list") return rpc_result(id, prompts_list(tools));

  boost::system::result<NamedCall, InvalidParams> call = InvalidParams{};
  core::PageCall::Kind kind = core::PageCall::Kind::tool;
  if (method == "tools/call") {
    call = parse_tool_call(params);
  } else if (method == "resources/read") {
    call = parse_resource_read(params);
    kind = core::PageCall::Kind::resource;
  } else if (method == "prompts/get") {
    call = parse_prompt_get(params);
    kind = core::PageCall::Kind::prompt;
  } else {
    return rpc_error(200, id, -32601, "Method not found: " + method);
  }
  if (!call) return rpc_error(200, id, -32602, call.error().message);
  return this->call(req, *session, kind, std::move(*call), json::serialize(id));
}

http::Response McpEndpoint::call(http::Request& req, core::Session& session, core::PageCall::Kind kind, NamedCall call,
                                 std::string id_json) {
  core::PageTools& tools = session.page_tools();
  if (kind == core::PageCall::Kind::tool && !tools.has_tool(call.name))
    return http::json_text_response(200, rpc_error_text(id_json, -32602, "Unknown tool: " + call.name));
  if (!tools.connected())
    return http::json_text_response(200, rpc_error_text(id_json, kNotConnected, "The page is not connected"));

  // The page answers when it answers: stream the response and keep it alive meanwhile.
  const bool sse = accepts_sse(req);
  http::Response r;
  r.headers.reserve(2);
  r.set("Content-Type", sse ? "text/event-stream" : "application/json");
  r.set("Cache-Control", "no-store");
  auto page = tools.shared_from_this();
  // Named coroutines with their arguments copied into their frames: GCC 12 mishandles lambda
  // coroutines that capture.
  std::string tag = call_tag(req.header("mcp-session-id").value_or(""), id_json);
  // The server runs a stream once: its strings move into the coroutine's frame, not copied.
  r.stream = [page, kind, call = std::move(call), id = std::move(id_json), tag = std::move(tag), sse,
              every = keep_alive_](http::BodyWriter& w) mutable {
    return stream_answer(w, std::move(page), kind, std::move(call), std::move(id), std::move(tag), sse, every);
  };
  r.reuse_after_stream = true;
  return r;
}

http::Response McpEndpoint::get(http::Request& req, std::shared_ptr<core::Session> session) {
  if (auto refused = refuse_version(req)) return std::move(*refused);
  if (!accepts_sse(req)) {
    http::Response r = plain_error(405, "Method not allowed");
    r.set("Allow", "GET, POST");
    return r;
  }
  // A stream for server messages: tells the client when the page's tools change.
  http::Response r;
  r.set("Content-Type", "text/event-stream");
  r.set("Cache-Control", "no-store");
  r.stream = [session, every = keep_alive_](http::BodyWriter& w) { return stream_changes(w, session, every); };
  return r;
}

}  // namespace leuria::mcp_server
