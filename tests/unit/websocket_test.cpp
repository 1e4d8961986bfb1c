// http::run_websocket's WebSocket (BeastWebSocket) on the engine's drained reads: a page that is gone
// is let go, however its end came and whatever the engine does next.
#include "http/websocket.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <functional>
#include <optional>
#include <poll.h>
#include <string>
#include <sys/socket.h>
#include <sys/time.h>

#include "transport/drained_read.hpp"

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::ip::tcp;
using leuria::http::WebSocket;

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

const std::string kLast = "{\"type\":\"bye\"}";

// The page's side: upgrades, then sends one message and resets the connection (it closed with input
// unread, or with SO_LINGER 0), both in the engine's socket before the engine's reactor looks. The
// message is read; the kernel, which counts a FIN but not a reset, says nothing remains, so the
// engine's next read waits for an event that will not come. `handler` is what the engine does then,
// after its read of the message (`first`); the run ends when run_websocket does, or at its bound.
struct ResetPage {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  std::optional<std::string> first;
  bool server_done = false;

  void run(std::function<asio::awaitable<void>(WebSocket&)> handler) {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::socket client(ioc), accepted(ioc);
    client.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    ASSERT_TRUE(leuria::transport::count_what_remains(accepted));
    const int server_fd = accepted.native_handle();
    beast::tcp_stream stream(std::move(accepted));
    const timeval bound{5, 0};  // the client's blocking read fails rather than hangs
    ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound), 0);

    leuria::http::Response res;
    res.upgrade = [&](WebSocket& ws) -> asio::awaitable<void> {
      first = co_await ws.read();
      co_await handler(ws);
    };
    const auto req = upgrade_request();
    const leuria::http::ServerLimits limits;  // idle timeout 60 s: far beyond the bounds here
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
    const std::string got(asio::buffers_begin(head.data()), asio::buffers_end(head.data()));
    ASSERT_NE(got.find(" 101 "), std::string::npos);
    ioc.poll();

    asio::write(client, asio::buffer(client_frame(kLast)));
    const linger hard{1, 0};
    ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard), 0);
    client.close();
    pollfd fd{server_fd, POLLERR | POLLHUP, 0};
    ASSERT_EQ(::poll(&fd, 1, 5000), 1);

    // The bound only stops a broken build from hanging the suite.
    for (int i = 0; i < 800 && !server_done; ++i) ioc.run_one_for(std::chrono::milliseconds(10));
  }
};

// Waits up to `bound` for `flag`, on the handler's executor.
asio::awaitable<void> wait_for(const bool& flag, std::chrono::milliseconds bound) {
  asio::steady_timer t(co_await asio::this_coro::executor);
  for (auto waited = std::chrono::milliseconds(0); !flag && waited < bound; waited += std::chrono::milliseconds(10)) {
    t.expires_after(std::chrono::milliseconds(10));
    co_await t.async_wait(asio::use_awaitable);
  }
}

}  // namespace

// The engine's next write (a channel's ping, a tool call) finds the peer gone: it must end the read
// waiting on the socket, or the channel is held until the engine exits.
TEST(WebSocket, APageThatResetAfterItsLastMessageIsLetGoAtTheNextWrite) {
  ResetPage page;
  std::optional<std::string> second;
  bool wrote = true, handler_done = false;
  page.run([&](WebSocket& ws) -> asio::awaitable<void> {
    wrote = co_await ws.write("{\"type\":\"ping\"}");
    second = co_await ws.read();
    handler_done = true;
  });
  EXPECT_EQ(page.first, std::optional<std::string>(kLast));
  EXPECT_FALSE(wrote);
  EXPECT_TRUE(handler_done);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_TRUE(page.server_done);
}

// The engine closes instead (the page broke the protocol, or the session ended) while its reader
// waits: the close frame finds the peer gone, and the close must end that read too, before the
// handler returns (whose end would close the socket anyway).
TEST(WebSocket, APageThatResetAfterItsLastMessageIsLetGoAtAClose) {
  ResetPage page;
  bool read_done = false, read_ended_before_return = false;
  std::optional<std::string> second = "not read";
  page.run([&](WebSocket& ws) -> asio::awaitable<void> {
    asio::co_spawn(
        co_await asio::this_coro::executor,
        [&]() -> asio::awaitable<void> {
          second = co_await ws.read();
          read_done = true;
        },
        asio::detached);
    co_await ws.close();
    co_await wait_for(read_done, std::chrono::milliseconds(5000));
    read_ended_before_return = read_done;
  });
  EXPECT_EQ(page.first, std::optional<std::string>(kLast));
  EXPECT_TRUE(read_ended_before_return);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_TRUE(page.server_done);
}
