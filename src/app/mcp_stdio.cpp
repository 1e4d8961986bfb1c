#include "app/mcp_stdio.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <unistd.h>

#include <cstdlib>
#include <functional>
#include <iostream>

#include <boost/json.hpp>

#include "http/client.hpp"
#include "json/read.hpp"

namespace leuria::app {

namespace asio = boost::asio;

namespace {

// The JSON-RPC messages in a 2xx answer, whole ones only: an SSE body's data lines that end in a line
// break, or a JSON body read to its end. What an answer that broke off cut short would be a broken
// line for the agent.
std::vector<std::string> messages_of(const std::string& body, bool complete) {
  std::vector<std::string> out;
  // The content type isn't returned by fetch; SSE bodies start with "event:", ":" or "data:" lines.
  const bool sse = body.starts_with("event:") || body.starts_with(":") || body.starts_with("data:");
  if (!sse) {
    auto first = body.find_first_not_of(" \t\r\n");
    if (complete && first != std::string::npos) out.push_back(body.substr(first));
    return out;
  }
  for (std::size_t start = 0, nl; (nl = body.find('\n', start)) != std::string::npos; start = nl + 1) {
    std::string line = body.substr(start, nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("data:")) out.push_back(line.substr(line.starts_with("data: ") ? 6 : 5));
  }
  return out;
}

// Whether the engine's `message` is the reply (a result or an error) to the request with this id. A
// whole message of the engine's that jsonio will not read nests deeper than its 64 levels, which only
// a page tool's result can: a reply.
bool replies_to(std::string_view message, const boost::json::value& id) {
  auto v = jsonio::read(message);
  if (!v) return true;
  const auto* o = v->if_object();
  if (!o || !(o->contains("result") || o->contains("error"))) return false;
  const auto* its = o->if_contains("id");
  return its && *its == id;
}

// Why the engine's answer to a request held no reply, as the error the agent gets.
std::string no_reply(const http::ClientResult& res) {
  switch (res.failure) {
    case http::Failure::bad_request:
    case http::Failure::unreachable:
      return "Could not reach the engine (" + res.error + ").";
    case http::Failure::no_answer:
      return "The engine did not answer (" + res.error + ").";
    case http::Failure::broke_off:
      return "The engine's answer broke off (" + res.error + ").";
    case http::Failure::none:
      break;
  }
  if (res.status / 100 != 2) return "The engine refused the request (HTTP " + std::to_string(res.status) + ").";
  return "The engine's answer held no reply.";
}

asio::awaitable<void> pump(asio::io_context& ioc, std::string url, std::string token) {
  asio::posix::stream_descriptor in(ioc, ::dup(STDIN_FILENO));
  asio::posix::stream_descriptor out_fd(ioc, ::dup(STDOUT_FILENO));
  asio::streambuf buffer(64 * 1024 * 1024);
  for (;;) {
    auto [ec, n] = co_await asio::async_read_until(in, buffer, '\n', asio::as_tuple(asio::use_awaitable));
    if (ec) break;
    std::string line(asio::buffers_begin(buffer.data()), asio::buffers_begin(buffer.data()) + static_cast<long>(n));
    buffer.consume(n);
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    if (line.empty()) continue;

    http::ClientRequest req;
    req.method = "POST";
    req.url = url;
    req.headers = {{"Content-Type", "application/json"},
                   {"Accept", "application/json, text/event-stream"},
                   {"Authorization", "Bearer " + token}};
    req.body = line;
    req.read_timeout = std::chrono::seconds(700);  // a page may take its 10 minutes
    std::string body;
    // Named, not a temporary in the co_await's arguments (GCC 12 coroutine rule).
    std::function<bool(std::string_view)> on_data = [&body](std::string_view piece) {
      body.append(piece);
      return true;
    };
    auto res = co_await http::fetch(ioc.get_executor(), req, on_data);
    // A request (a method and an id) gets exactly one reply: the engine's, or ours saying why there
    // was none. A notification gets nothing.
    auto request = jsonio::read_object(line);
    const boost::json::value* id = request && request->contains("method") ? request->if_contains("id") : nullptr;
    bool replied = false;
    if (res.status / 100 == 2) {
      for (auto& m : messages_of(body, res.complete)) {
        if (id && !replied) replied = replies_to(m, *id);
        m.push_back('\n');
        co_await asio::async_write(out_fd, asio::buffer(m), asio::as_tuple(asio::use_awaitable));
      }
    }
    const bool failed = res.status / 100 != 2 || res.failure != http::Failure::none;
    if (failed || (id && !replied)) std::cerr << "leuria mcp-stdio: " << no_reply(res) << "\n";
    if (!id || replied) continue;
    boost::json::object err{{"jsonrpc", "2.0"},
                            {"id", *id},
                            {"error", boost::json::object{{"code", -32000}, {"message", no_reply(res)}}}};
    std::string out = boost::json::serialize(err) + "\n";
    co_await asio::async_write(out_fd, asio::buffer(out), asio::as_tuple(asio::use_awaitable));
  }
}

}  // namespace

int mcp_stdio(const std::string& url) {
  const char* token = std::getenv("LEURIA_MCP_TOKEN");
  if (!token || !*token) {
    std::cerr << "leuria mcp-stdio: set LEURIA_MCP_TOKEN to the session's channel token.\n";
    return 1;
  }
  asio::io_context ioc;
  asio::co_spawn(ioc, pump(ioc, url, token), asio::detached);
  ioc.run();
  return 0;
}

}  // namespace leuria::app
