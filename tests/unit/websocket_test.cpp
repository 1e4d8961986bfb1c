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

// A masked client frame of a short payload, as a browser sends it: text, or a ping.
std::string client_frame(const std::string& text, unsigned char opcode = 0x1) {
  const unsigned char mask[4] = {0x11, 0x22, 0x33, 0x44};
  std::string f;
  f += static_cast<char>(0x80 | opcode);
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

// The page's side of a fresh connection, upgraded with run_websocket: start() returns once the 101 is
// read, with the handler running under `limits`. `client`'s blocking reads fail at 5 s rather than
// hang. run() drives the engine until run_websocket ends, or 10 s pass (the bound only stops a broken
// build from hanging the suite).
struct Page {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  tcp::socket client{ioc};
  int server_fd = -1;  // the engine's socket
  bool server_done = false;

  void start(std::function<asio::awaitable<void>(WebSocket&)> handler, leuria::http::ServerLimits limits) {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::socket accepted(ioc);
    client.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    ASSERT_TRUE(leuria::transport::count_what_remains(accepted));
    const timeval bound{5, 0};
    ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &bound, sizeof bound), 0);
    server_fd = accepted.native_handle();
    stream_.emplace(std::move(accepted));
    res_.upgrade = std::move(handler);
    asio::co_spawn(
        ioc,
        [this, limits]() -> asio::awaitable<void> {
          co_await leuria::http::run_websocket(*stream_, req_, res_, limits);
          server_done = true;
        },
        asio::detached);
    // The 101, then the handler runs until it waits.
    for (int i = 0; i < 100; ++i) ioc.poll();
    asio::streambuf head;
    asio::read_until(client, head, "\r\n\r\n");
    const std::string got(asio::buffers_begin(head.data()), asio::buffers_end(head.data()));
    ASSERT_NE(got.find(" 101 "), std::string::npos);
    ioc.poll();
  }
  void run() {
    const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!server_done && std::chrono::steady_clock::now() < end) ioc.run_one_for(std::chrono::milliseconds(10));
  }

 private:
  std::optional<beast::tcp_stream> stream_;
  leuria::http::Response res_;
  const bhttp::request<bhttp::string_body> req_ = upgrade_request();
};

// The page's side: upgrades, then sends one message and resets the connection (it closed with input
// unread, or with SO_LINGER 0), both in the engine's socket before the engine's reactor looks. The
// message is read; the kernel, which counts a FIN but not a reset, says nothing remains, so the
// engine's next read waits for an event that will not come. `handler` is what the engine does then,
// after its read of the message (`first`); the run ends when run_websocket does, or at its bound.
struct ResetPage {
  Page page;
  std::optional<std::string> first;
  bool server_done = false;

  void run(std::function<asio::awaitable<void>(WebSocket&)> handler) {
    page.start(
        [this, handler](WebSocket& ws) -> asio::awaitable<void> {
          first = co_await ws.read();
          co_await handler(ws);
        },
        leuria::http::ServerLimits{});  // idle timeout 60 s: far beyond the bounds here
    asio::write(page.client, asio::buffer(client_frame(kLast)));
    const linger hard{1, 0};
    ASSERT_EQ(::setsockopt(page.client.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard), 0);
    page.client.close();
    pollfd fd{page.server_fd, POLLERR | POLLHUP, 0};
    ASSERT_EQ(::poll(&fd, 1, 5000), 1);
    page.run();
    server_done = page.server_done;
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

// A page that stays connected but has stopped reading, while a write of Beast's to it is stuck in a
// full socket: the engine's close waits for that write to end, and a close begun must not keep the
// idle deadline from dropping a peer silent for the whole idle timeout (Beast's handshake timer is
// armed only once the close's frame may go).
TEST(WebSocket, AClosingPageThatStoppedReadingBehindAStuckWriteIsDropped) {
  Page page;
  leuria::http::ServerLimits limits;
  limits.idle_timeout = std::chrono::milliseconds(400);
  bool read_done = false, write_done = false, close_done = false, wrote = true;
  std::optional<std::string> read = "not read";
  page.start(
      [&](WebSocket& ws) -> asio::awaitable<void> {
        const auto ex = co_await asio::this_coro::executor;
        asio::co_spawn(
            ex,
            [&]() -> asio::awaitable<void> {
              read = co_await ws.read();
              read_done = true;
            },
            asio::detached);
        // The page's ping, answered from within that read (which goes on waiting for a message),
        // leaves the next write to Beast: far more than the two sockets' buffers take.
        asio::steady_timer t(ex);
        t.expires_after(std::chrono::milliseconds(50));
        co_await t.async_wait(asio::use_awaitable);
        asio::co_spawn(
            ex,
            [&]() -> asio::awaitable<void> {
              wrote = co_await ws.write(std::string(64 * 1024 * 1024, 'x'));
              write_done = true;
            },
            asio::detached);
        t.expires_after(std::chrono::milliseconds(50));
        co_await t.async_wait(asio::use_awaitable);
        co_await ws.close();
        close_done = true;
        co_await wait_for(write_done, std::chrono::milliseconds(2000));
        co_await wait_for(read_done, std::chrono::milliseconds(2000));
      },
      limits);
  asio::write(page.client, asio::buffer(client_frame("", 0x9)));
  page.run();
  EXPECT_TRUE(close_done);
  EXPECT_TRUE(write_done);
  EXPECT_FALSE(wrote);
  EXPECT_TRUE(read_done);
  EXPECT_EQ(read, std::nullopt);
  EXPECT_TRUE(page.server_done);
}
