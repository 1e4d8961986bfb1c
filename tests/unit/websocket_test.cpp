// http::run_websocket's WebSocket (BeastWebSocket) on the engine's drained reads: a page that is gone
// is let go, however its end came and whatever the engine does next.
#include "http/websocket.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
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
#include <linux/sockios.h>
#include <poll.h>
#include <string>
#include <sys/ioctl.h>
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
// hang. With `small_buffers`, both sockets' buffers are small, so that a write the page does not read
// fills them soon whatever the host's settings. run() drives the engine until run_websocket ends, or
// 10 s pass (the bound only stops a broken build from hanging the suite).
struct Page {
 private:
  // Before the io_context: the frames it destroys at its end (a test that failed with the engine
  // still waiting) refer to them.
  leuria::http::Response res_;
  const bhttp::request<bhttp::string_body> req_ = upgrade_request();

 public:
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  tcp::socket client{ioc};
  int server_fd = -1;  // the engine's socket
  bool server_done = false;

  void start(std::function<asio::awaitable<void>(WebSocket&)> handler, leuria::http::ServerLimits limits,
             bool small_buffers = false) {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    tcp::socket accepted(ioc);
    client.open(tcp::v4());
    const int small = 64 * 1024;
    if (small_buffers) {
      ASSERT_EQ(::setsockopt(client.native_handle(), SOL_SOCKET, SO_RCVBUF, &small, sizeof small), 0);
    }
    client.connect(acceptor.local_endpoint());
    acceptor.accept(accepted);
    if (small_buffers) {
      ASSERT_EQ(::setsockopt(accepted.native_handle(), SOL_SOCKET, SO_SNDBUF, &small, sizeof small), 0);
    }
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
};

// The page's side: upgrades, then sends one message and resets the connection (it closed with input
// unread, or with SO_LINGER 0), both in the engine's socket before the engine's reactor looks. The
// message is read; the kernel, which counts a FIN but not a reset, says nothing remains, so the
// engine's next read waits for an event that will not come. `handler` is what the engine does then,
// after its read of the message (`first`); the run ends when run_websocket does, or at its bound.
struct ResetPage {
  Page page;
  std::optional<std::string> first;

  void run(std::function<asio::awaitable<void>(WebSocket&)> handler) {
    ASSERT_NO_FATAL_FAILURE(page.start(
        [this, handler](WebSocket& ws) -> asio::awaitable<void> {
          first = co_await ws.read();
          co_await handler(ws);
        },
        leuria::http::ServerLimits{}));  // idle timeout 60 s: far beyond the bounds here
    asio::write(page.client, asio::buffer(client_frame(kLast)));
    const linger hard{1, 0};
    ASSERT_EQ(::setsockopt(page.client.native_handle(), SOL_SOCKET, SO_LINGER, &hard, sizeof hard), 0);
    page.client.close();
    pollfd fd{page.server_fd, POLLERR | POLLHUP, 0};
    ASSERT_EQ(::poll(&fd, 1, 5000), 1);
    page.run();
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
  ResetPage reset;
  std::optional<std::string> second;
  bool wrote = true, handler_done = false;
  reset.run([&](WebSocket& ws) -> asio::awaitable<void> {
    wrote = co_await ws.write("{\"type\":\"ping\"}");
    second = co_await ws.read();
    handler_done = true;
  });
  EXPECT_EQ(reset.first, std::optional<std::string>(kLast));
  EXPECT_FALSE(wrote);
  EXPECT_TRUE(handler_done);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_TRUE(reset.page.server_done);
}

// The engine closes instead (the page broke the protocol, or the session ended) while its reader
// waits: the close frame finds the peer gone, and the close must end that read too, before the
// handler returns (whose end would close the socket anyway).
TEST(WebSocket, APageThatResetAfterItsLastMessageIsLetGoAtAClose) {
  ResetPage reset;
  bool read_done = false, read_ended_before_return = false;
  std::optional<std::string> second = "not read";
  reset.run([&](WebSocket& ws) -> asio::awaitable<void> {
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
  EXPECT_EQ(reset.first, std::optional<std::string>(kLast));
  EXPECT_TRUE(read_ended_before_return);
  EXPECT_EQ(second, std::nullopt);
  EXPECT_TRUE(reset.page.server_done);
}

namespace {

// A write the page never reads, stuck in a full socket. The page pings first: Beast answers from within
// the engine's read, which goes on waiting for a message, so the engine's next write is Beast's (not
// write_now's, which a ping while it is half-sent would end at once). Then the page never reads;
// with `pongs`, once the write is stuck, it sends an unsolicited pong every 50 ms, which Beast takes in
// without writing.
struct StuckWrite {
  Page page;
  bool read_done = false, write_done = false, wrote = true, full = false;
  std::optional<std::string> read = "not read";

  // `then` runs in the handler once the write is stuck (or after 10 s: `full` says which).
  void run(leuria::http::ServerLimits limits, bool pongs, std::function<asio::awaitable<void>(WebSocket&)> then) {
    ASSERT_NO_FATAL_FAILURE(page.start(
        [this, then](WebSocket& ws) -> asio::awaitable<void> {
          const auto ex = co_await asio::this_coro::executor;
          asio::co_spawn(
              ex,
              [&]() -> asio::awaitable<void> {
                read = co_await ws.read();
                read_done = true;
              },
              asio::detached);
          asio::steady_timer t(ex);
          for (int i = 0, pong = 0; pong < 2 && i < 500; ++i) {  // the ping read, and its pong at the page
            t.expires_after(std::chrono::milliseconds(10));
            co_await t.async_wait(asio::use_awaitable);
            if (::ioctl(page.client.native_handle(), FIONREAD, &pong) != 0) pong = 0;
          }
          asio::co_spawn(
              ex,
              [&]() -> asio::awaitable<void> {
                wrote = co_await ws.write(std::string(8 * 1024 * 1024, 'x'));
                write_done = true;
              },
              asio::detached);
          // Stuck: no room in the engine's socket, and what it holds no longer moves to the page's (whose
          // buffer is full), for three looks in a row. While it moves, Beast's write goes on and ends frames
          // (it writes a message in 4 KB frames), and a close could take its turn between two of them.
          for (int same = 0, i = 0, last = -1; same < 3 && i < 500 && !write_done; ++i) {
            t.expires_after(std::chrono::milliseconds(20));
            co_await t.async_wait(asio::use_awaitable);
            pollfd fd{page.server_fd, POLLOUT, 0};
            int queued = 0;
            const bool no_room = ::poll(&fd, 1, 0) == 0 && ::ioctl(page.server_fd, SIOCOUTQ, &queued) == 0;
            same = no_room && queued == last ? same + 1 : 0;
            last = queued;
            full = same == 3;
          }
          co_await then(ws);
          // Longer than run()'s bound: when the engine holds on, the run's bound ends the test, with the
          // write's coroutine still suspended (not resumed into a destroyed WebSocket).
          co_await wait_for(write_done, std::chrono::milliseconds(20000));
          co_await wait_for(read_done, std::chrono::milliseconds(20000));
        },
        limits, true));
    asio::write(page.client, asio::buffer(client_frame("", 0x9)));
    if (pongs) {
      asio::co_spawn(
          page.ioc,
          [this]() -> asio::awaitable<void> {
            asio::steady_timer t(page.ioc);
            const std::string pong = client_frame("", 0xA);
            while (!page.server_done) {
              t.expires_after(std::chrono::milliseconds(full ? 50 : 10));
              co_await t.async_wait(asio::use_awaitable);
              if (!full) continue;
              auto [ec, n] =
                  co_await asio::async_write(page.client, asio::buffer(pong), asio::as_tuple(asio::use_awaitable));
              if (ec) co_return;
            }
          },
          asio::detached);
    }
    page.run();
  }

  void expect_let_go() {
    EXPECT_TRUE(full);
    EXPECT_TRUE(write_done);
    EXPECT_FALSE(wrote);
    EXPECT_TRUE(read_done);
    EXPECT_EQ(read, std::nullopt);
    EXPECT_TRUE(page.server_done);
  }
};

}  // namespace

// The engine closes (the session ended) while its write to the page is stuck: the close frame waits for
// that write, so Beast's handshake timer never starts. The close's own bound, the shorter of the write
// and idle timeouts, ends the connection, however often the page is heard meanwhile (pongs, from just
// after the close, which would otherwise keep moving the idle deadline).
TEST(WebSocket, ACloseBehindAStuckWriteEndsAtItsOwnBoundHoweverOftenThePageIsHeard) {
  StuckWrite w;
  leuria::http::ServerLimits limits;
  limits.idle_timeout = std::chrono::milliseconds(400);  // the close's bound
  limits.write_timeout = std::chrono::seconds(60);       // far off: the write's own bound is not what ends it
  bool close_done = false;
  w.run(limits, true, [&](WebSocket& ws) -> asio::awaitable<void> {
    co_await ws.close();
    close_done = true;
  });
  EXPECT_TRUE(close_done);
  w.expect_let_go();
}

// No close: the page keeps sending (pongs) and never reads. A write of the engine's that has waited past
// the write timeout ends the connection at the next frame heard; the idle timeout never would.
TEST(WebSocket, APageThatSendsButNeverReadsIsLetGoAtTheWriteTimeout) {
  StuckWrite w;
  leuria::http::ServerLimits limits;
  limits.write_timeout = std::chrono::milliseconds(300);  // idle: 60 s
  w.run(limits, true, [](WebSocket&) -> asio::awaitable<void> { co_return; });
  w.expect_let_go();
}

// A page that stopped reading and is silent: the idle timeout ends it (the ping at its half waits behind
// the stuck write, and the socket is dropped at its end). As before the two above: it guards that path.
TEST(WebSocket, ASilentPageBehindAStuckWriteIsLetGoAtTheIdleTimeout) {
  StuckWrite w;
  leuria::http::ServerLimits limits;
  limits.idle_timeout = std::chrono::milliseconds(400);
  w.run(limits, false, [](WebSocket&) -> asio::awaitable<void> { co_return; });
  w.expect_let_go();
}
