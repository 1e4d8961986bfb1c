// http::run_websocket's WebSocket (BeastWebSocket) on the engine's drained reads: a page that is gone
// is let go, however its end came.
#include "http/websocket.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/socket.h>

#include "transport/drained_read.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::ip::tcp;

namespace {

// A masked client text frame of a short message, as a browser sends it.
std::string client_frame(const std::string& text) {
  const unsigned char mask[4] = {0x11, 0x22, 0x33, 0x44};
  std::string f;
  f += static_cast<char>(0x81);
  f += static_cast<char>(0x80 | text.size());
  f.append(reinterpret_cast<const char*>(mask), 4);
  for (std::size_t i = 0; i < text.size(); ++i) f += static_cast<char>(text[i] ^ mask[i % 4]);
  return f;
}

bhttp::request<bhttp::string_body> upgrade_request() {
  bhttp::request<bhttp::string_body> req{bhttp::verb::get, "/", 11};
  req.set(bhttp::field::host, "127.0.0.1");
  req.set(bhttp::field::upgrade, "websocket");
  req.set(bhttp::field::connection, "Upgrade");
  req.set(bhttp::field::sec_websocket_key, "dGhlIHNhbXBsZSBub25jZQ==");
  req.set(bhttp::field::sec_websocket_version, "13");
  return req;
}

}  // namespace

// The page sends a message and resets its connection (it closed with input unread, or with SO_LINGER
// 0), both in the engine's socket before the engine's reactor looks: the message is read, and the
// kernel, which counts a FIN but not a reset, says nothing remains, so the next read waits for an
// event that will not come. The engine's next write (a channel's ping, a tool call) finds the peer
// gone, and must end that read, or the channel is held until the engine exits.
TEST(WebSocket, APageThatResetAfterItsLastMessageIsLetGoAtTheNextWrite) {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  tcp::socket client(ioc), accepted(ioc);
  client.connect(acceptor.local_endpoint());
  acceptor.accept(accepted);
  ASSERT_TRUE(leuria::transport::count_what_remains(accepted));
  const int server_fd = accepted.native_handle();
  beast::tcp_stream stream(std::move(accepted));

  std::optional<std::string> first, second;
  bool wrote = true, handler_done = false, server_done = false;
  leuria::http::Response res;
  res.upgrade = [&](leuria::http::WebSocket& ws) -> asio::awaitable<void> {
    first = co_await ws.read();
    wrote = co_await ws.write("{\"type\":\"ping\"}");
    second = co_await ws.read();
    handler_done = true;
  };
  const auto req = upgrade_request();
  leuria::http::ServerLimits limits;  // idle timeout 60 s: far beyond this test's bound
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await leuria::http::run_websocket(stream, req, res, limits);
        server_done = true;
      },
      asio::detached);

  // The 101, then the handler's first read waits in the reactor.
  for (int i = 0; i < 100; ++i) ioc.poll();
  asio::streambuf head;
  asio::read_until(client, head, "\r\n\r\n");
  ASSERT_NE(std::string(asio::buffers_begin(head.data()), asio::buffers_end(head.data())).find(" 101 "), std::string::npos);
  ioc.poll();

  // The message and the reset, both in the engine's socket before its reactor runs again.
  asio::write(client, asio::buffer(client_frame("{\"type\":\"bye\"}")));
  const linger hard{1, 0};
  ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard), 0);
  client.close();
  pollfd fd{server_fd, POLLERR | POLLHUP, 0};
  ASSERT_EQ(::poll(&fd, 1, 5000), 1);

  // The bound only stops a broken build from hanging the suite (the idle timeout is 60 s).
  for (int i = 0; i < 500 && !server_done; ++i) ioc.run_one_for(std::chrono::milliseconds(10));
  EXPECT_EQ(first, std::optional<std::string>("{\"type\":\"bye\"}"));
  EXPECT_FALSE(wrote);
  EXPECT_TRUE(handler_done);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_TRUE(server_done);
}
