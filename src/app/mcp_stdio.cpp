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

#include "app/mcp_bridge.hpp"
#include "http/client.hpp"

namespace leuria::app {

namespace asio = boost::asio;

namespace {

// Until stdin ends (exit 0) or brings a line longer than 64 MB (exit 1: the agent sees the server go, and
// stderr says why).
asio::awaitable<void> pump(asio::io_context& ioc, std::string url, std::string token, int& exit_code) {
  asio::posix::stream_descriptor in(ioc, ::dup(STDIN_FILENO));
  asio::posix::stream_descriptor out_fd(ioc, ::dup(STDOUT_FILENO));
  asio::streambuf buffer(64 * 1024 * 1024);
  const asio::any_io_executor ex = ioc.get_executor();
  for (;;) {
    auto [ec, n] = co_await asio::async_read_until(in, buffer, '\n', asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::not_found) {
      std::cerr << "leuria mcp-stdio: a message longer than 64 MB came on stdin; stopping.\n";
      exit_code = 1;
      break;
    }
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
    auto res = co_await http::fetch(ex, req, on_data);
    // Each request gets exactly one reply, the engine's or an error saying why there was none; only
    // whole messages go on (app/mcp_bridge.hpp).
    auto reply = bridge_reply(line, res, body);
    if (reply.trouble) std::cerr << "leuria mcp-stdio: " << *reply.trouble << "\n";
    for (auto& out : reply.lines) {
      out.push_back('\n');
      co_await asio::async_write(out_fd, asio::buffer(out), asio::as_tuple(asio::use_awaitable));
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
  int exit_code = 0;
  asio::co_spawn(ioc, pump(ioc, url, token, exit_code), asio::detached);
  ioc.run();
  return exit_code;
}

}  // namespace leuria::app
