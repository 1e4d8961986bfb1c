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

// The JSON-RPC messages in an answer: a JSON body as is, or the data lines of an SSE body.
std::vector<std::string> messages_of(const std::string& content_type, const std::string& body) {
  std::vector<std::string> out;
  if (content_type.find("text/event-stream") == std::string::npos) {
    auto first = body.find_first_not_of(" \t\r\n");
    if (first != std::string::npos) out.push_back(body.substr(first));
    return out;
  }
  std::size_t start = 0;
  while (start < body.size()) {
    auto nl = body.find('\n', start);
    std::string line = body.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.starts_with("data:")) out.push_back(line.substr(line.starts_with("data: ") ? 6 : 5));
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  return out;
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
    if (res.status / 100 != 2) {
      std::string what = res.error;
      if (res.status) what = "HTTP " + std::to_string(res.status);
      std::cerr << "leuria mcp-stdio: the engine answered " << what << "\n";
      // A request still gets its one reply, as an error; notifications get nothing.
      auto msg = jsonio::read_object(line);
      if (msg && msg->contains("id") && msg->contains("method")) {
        boost::json::object err{{"jsonrpc", "2.0"},
                                {"id", msg->at("id")},
                                {"error", boost::json::object{{"code", -32000}, {"message", "The engine refused: " + what}}}};
        std::string out = boost::json::serialize(err) + "\n";
        co_await asio::async_write(out_fd, asio::buffer(out), asio::as_tuple(asio::use_awaitable));
      }
      continue;
    }
    // The content type isn't returned by fetch; SSE bodies start with "event:" or ":" lines.
    const bool sse = body.starts_with("event:") || body.starts_with(":") || body.starts_with("data:");
    for (auto& m : messages_of(sse ? "text/event-stream" : "application/json", body)) {
      m.push_back('\n');
      co_await asio::async_write(out_fd, asio::buffer(m), asio::as_tuple(asio::use_awaitable));
    }
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
