// Fuzz target: the two JSON-RPC dispatchers, fed the same messages, one per line.
// - MCP (the AI calling the page's tools): each line is the body of a POST /webmcp/mcp with the
//   session's bearer (adapters/mcp_server/endpoint.cpp and codec.cpp), every other one accepting
//   text/event-stream; the page is connected and answers calls at once; streamed answers are run.
// - ACP client side (an agent's stdout): each line goes to rpc/connection.cpp receive(), with the
//   engine's own requests initialize (id 1), session/new (2) and session/prompt (3) waiting, their
//   results decoded by adapters/acp_client/codec.cpp; the agent's requests are answered by the
//   permission policy (core/permission.cpp) as acp_backend.cpp does, its notifications decoded by
//   parse_update; and a line the text-chunk fast path (scan_text_update) reads, it reads as they do,
//   with its slot (kept from line to line) and without.
// Checks: no exception leaves a door; MCP answers 200, 202 or 400, each a JSON-RPC 2.0 response
// (one of result/error) whose id is the request's; a streamed answer is exactly one SSE "message"
// event (or JSON after blank keep-alive lines) with the same; ACP sends only JSON-RPC 2.0 objects,
// exactly one reply per request it dispatched, picks an allow option only for a page tool and only
// an option of the right kind, and every call of ours ends exactly once.
#include <boost/asio/detached.hpp>
#include <boost/json.hpp>

#include "adapters/acp_client/codec.hpp"
#include "core/permission.hpp"
#include "rpc/connection.hpp"
#include "support/sse.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;
namespace json = boost::json;
namespace asio = boost::asio;

namespace {

json::object rpc_object(std::string_view text, const char* what) {
  boost::system::error_code ec;
  json::value v = json::parse(text, ec);
  if (ec || !v.is_object()) fuzz::fail(what);
  auto& o = v.as_object();
  check(o.contains("jsonrpc") && o.at("jsonrpc") == "2.0", what);
  return std::move(o);
}

void check_response(const json::object& o, const std::optional<json::value>& id) {
  check(o.contains("id") && (o.contains("result") != o.contains("error")), "not a JSON-RPC response");
  // A fractional id is compared loosely: Boost 1.81 reads doubles to within a few ULP, so one that
  // went out and back through text may be a neighbouring double (JSON-RPC says ids SHOULD NOT be
  // fractional; every agent sends integers or strings).
  if (id && id->is_double())
    check(o.at("id").is_double(), "a fractional id came back as something else");
  else if (id)
    check(o.at("id") == *id, "a response with another id");
}

// ---- MCP

void mcp_post(fuzz::World& w, const std::string& body, bool sse) {
  std::vector<http::Header> h{{"Host", "127.0.0.1:5000"},
                              {"Authorization", "Bearer " + w.good_session->page_tools().channel_token()},
                              {"Content-Type", "application/json"}};
  if (sse) h.push_back({"Accept", "application/json, text/event-stream"});
  auto req = fuzz::make_request("POST", "/webmcp/mcp", std::move(h), body);
  auto res = fuzz::run(w.ioc, w.handle(req));
  check(res.has_value(), "the MCP door never answered");
  check(res->status == 200 || res->status == 202 || res->status == 400, "an MCP status other than 200, 202, 400");

  // The request's id, when it has one as Boost.JSON reads it.
  std::optional<json::value> id;
  boost::system::error_code ec;
  json::value in = json::parse(body, ec);
  if (!ec && in.is_object() && in.as_object().contains("id")) id = in.as_object().at("id");

  if (res->status == 202) {
    check(res->body.empty() && !res->stream, "a 202 with a body");
    return;
  }
  if (!res->stream) {
    const auto o = rpc_object(res->body, "an MCP answer that is not JSON-RPC");
    check_response(o, res->status == 200 ? id : std::nullopt);
    return;
  }
  check(res->status == 200 && id.has_value(), "a streamed answer to something that isn't a call");
  fuzz::CollectingWriter writer;
  check(fuzz::run(w.ioc, res->stream(writer)), "a streamed MCP answer never ended");
  if (sse) {
    auto events = fuzz::parse_sse(writer.body);
    check(events.size() == 1 && events[0].type == "message", "a streamed answer is not one SSE message event");
    check_response(rpc_object(events[0].data, "an SSE answer that is not JSON-RPC"), id);
  } else {
    std::string_view body_text = writer.body;
    while (body_text.starts_with("\n")) body_text.remove_prefix(1);
    check_response(rpc_object(body_text, "a streamed JSON answer that is not JSON-RPC"), id);
  }
}

// ---- ACP

struct Acp {
  std::vector<std::string> sent;
  int dispatched = 0;  // requests handed to our handler
  int calls_ended = 0;
};

const std::vector<std::string> kPageTools{"search", "buy"};

asio::awaitable<rpc::Result> on_request(Acp* acp, std::string method, json::value params) {
  ++acp->dispatched;
  if (method == "fuzz/throw") throw std::runtime_error("a handler that throws");
  if (method != "session/request_permission")
    co_return rpc::RpcError{rpc::kMethodNotFound, "The client does not offer " + method, nullptr};
  auto req = acp_client::parse_permission_request(params);
  auto tool = core::page_tool_named(req.names, kPageTools);
  if (tool) check(std::find(kPageTools.begin(), kPageTools.end(), *tool) != kPageTools.end(), "a tool from nowhere");
  auto option = core::choose_option(tool.has_value(), req.options);
  if (option) {
    bool right_kind = false;
    for (auto& o : req.options)
      if (o.id == *option) right_kind = right_kind || o.kind.starts_with(tool ? "allow" : "reject");
    check(right_kind, "an option of the wrong kind was chosen");
  }
  co_return acp_client::permission_result(option);
}

asio::awaitable<void> our_call(std::shared_ptr<rpc::Connection> conn, Acp* acp, int which) {
  if (which == 1) {
    auto r = co_await conn->call("initialize", acp_client::initialize_params("fuzz"));
    if (r) (void)acp_client::parse_initialize(*r);
  } else if (which == 2) {
    auto r = co_await conn->call("session/new", json::object{{"cwd", "/tmp"}});
    if (r) (void)acp_client::parse_new_session(*r);
  } else {
    auto r = co_await conn->call("session/prompt", acp_client::prompt_params("s1", {core::PromptBlock{}}));
    if (r) (void)acp_client::stop_reason(*r);
  }
  ++acp->calls_ended;
}

void acp(asio::io_context& ioc, const std::deque<std::string>& input) {
  Acp state;
  auto conn = std::make_shared<rpc::Connection>(
      ioc.get_executor(),
      [&state](std::string line) {
        state.sent.push_back(std::move(line));
        return true;
      },
      8);
  conn->on_request([&state](std::string method, json::value params) {
    return on_request(&state, std::move(method), std::move(params));
  });
  std::optional<acp_client::Update> last_update;  // what the whole way made of the last line
  conn->on_notification([&last_update](std::string method, json::value params) {
    if (method == "session/update") last_update = acp_client::parse_update(params);
  });
  conn->on_protocol_error([](std::string) {});
  for (int i = 1; i <= 3; ++i) asio::co_spawn(ioc, our_call(conn, &state, i), asio::detached);
  fuzz::drain(ioc);  // our three calls are out
  acp_client::TextSlot slot;  // kept from line to line, as acp_backend.cpp keeps one per agent
  for (auto& line : input) {
    // The fast path for text chunks (scan_text_update) must read a line exactly as the whole way,
    // and read through the slot as without it.
    const auto fast = acp_client::scan_text_update(line);
    const auto slotted = acp_client::scan_text_update(line, &slot);
    check(slotted.has_value() == fast.has_value() && (!fast || (slotted->kind == fast->kind && slotted->text == fast->text)),
          "a line read through the slot reads otherwise");
    last_update.reset();
    conn->receive(line);
    fuzz::drain(ioc);
    if (fast)
      check(last_update && last_update->kind == fast->kind && last_update->text == fast->text,
            "the text-chunk fast path and the whole way read a line differently");
  }
  int replies = 0;
  for (auto& line : state.sent) {
    auto o = rpc_object(line, "ACP sent something that is not JSON-RPC 2.0");
    if (!o.contains("method")) {
      check_response(o, std::nullopt);
      ++replies;
    }
  }
  check(replies == state.dispatched, "not exactly one reply per request");
  conn->close("the agent exited");
  fuzz::drain(ioc);
  check(state.calls_ended == 3, "a call of ours never ended");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  fuzz::World w(false);
  auto& tools = w.good_session->page_tools();
  tools.add_tool(core::ToolSpec{"search", "Searches", R"({"type":"object"})"}, "");
  tools.attach(std::make_shared<fuzz::AnsweringPage>(w.ioc.get_executor(), tools.weak_from_this()));
  const auto messages = fuzz::split_lines(w.substitute(input), 128);
  for (std::size_t i = 0; i < messages.size(); ++i) mcp_post(w, messages[i], i % 2 == 1);
  acp(w.ioc, messages);
  return 0;
}
