// transport::DrainedTcpStream, the engine's WebSockets' next layer: Beast's WebSocket works over it as
// over its own TCP stream (messages of any size, in any timing, the closing handshake, the peer's
// end), and its read of a buffer sequence fills the first piece with room.
#include "transport/drained_stream.hpp"

#include <gtest/gtest.h>

#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_to_string.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/websocket.hpp>
#include <chrono>
#include <poll.h>
#include <string>
#include <vector>

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace websocket = beast::websocket;
using asio::ip::tcp;
using leuria::transport::DrainedTcpStream;

namespace {

// A connected pair on loopback; the server's socket counts what remains, as the listener's do.
struct Pair {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  tcp::socket server{ioc};
  tcp::socket client{ioc};
  Pair() {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    client.connect(acceptor.local_endpoint());
    acceptor.accept(server);
    EXPECT_TRUE(leuria::transport::count_what_remains(server));
  }
  // Runs until both sides are done; the bound only stops a broken build from hanging the suite.
  void run_until(const bool& a, const bool& b) {
    for (int i = 0; i < 3000 && !(a && b); ++i) ioc.run_one_for(std::chrono::milliseconds(10));
  }
};

// Messages on both sides of the size of Beast's read buffer (1,536 B): small ones, and ones larger than it.
std::vector<std::string> messages() {
  std::vector<std::string> out;
  for (std::size_t size : {5, 100000, 3, 1535, 1537, 4097, 1, 70000, 12}) {
    std::string m(size, '\0');
    for (std::size_t i = 0; i < size; ++i) m[i] = static_cast<char>('a' + (i * 7 + size) % 26);
    out.push_back(std::move(m));
  }
  return out;
}

// The engine's side: accepts, echoes every message, and says how its reads ended.
asio::awaitable<void> echo_server(tcp::socket socket, std::string& ended, bool& done) {
  websocket::stream<DrainedTcpStream> ws(beast::tcp_stream(std::move(socket)));
  auto [aec] = co_await ws.async_accept(asio::as_tuple(asio::use_awaitable));
  if (aec) {
    ended = "accept: " + aec.message();
    done = true;
    co_return;
  }
  for (;;) {
    beast::flat_buffer buffer;
    auto [ec, n] = co_await ws.async_read(buffer, asio::as_tuple(asio::use_awaitable));
    if (ec) {
      ended = ec == websocket::error::closed ? "closed" : ec.message();
      break;
    }
    ws.text(true);
    auto [wec, w] = co_await ws.async_write(buffer.data(), asio::as_tuple(asio::use_awaitable));
    if (wec) {
      ended = "write: " + wec.message();
      break;
    }
  }
  done = true;
}

}  // namespace

TEST(DrainedTcpStream, BeastsWebSocketEchoesEveryMessageAndCloses) {
  Pair p;
  std::string ended;
  bool server_done = false, client_done = false;
  std::vector<std::string> echoed;
  asio::co_spawn(p.ioc, echo_server(std::move(p.server), ended, server_done), asio::detached);
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        websocket::stream<tcp::socket> ws(std::move(p.client));
        co_await ws.async_handshake("127.0.0.1", "/", asio::use_awaitable);
        // One at a time (the server's read waits between them), then all at once (they queue up in
        // its socket, behind one readiness).
        const auto all = messages();
        for (const auto& m : all) {
          co_await ws.async_write(asio::buffer(m), asio::use_awaitable);
          beast::flat_buffer b;
          co_await ws.async_read(b, asio::use_awaitable);
          echoed.push_back(beast::buffers_to_string(b.data()));
        }
        for (const auto& m : all) co_await ws.async_write(asio::buffer(m), asio::use_awaitable);
        for (std::size_t i = 0; i < all.size(); ++i) {
          beast::flat_buffer b;
          co_await ws.async_read(b, asio::use_awaitable);
          echoed.push_back(beast::buffers_to_string(b.data()));
        }
        co_await ws.async_close(websocket::close_code::normal, asio::use_awaitable);
        client_done = true;
      },
      asio::detached);
  p.run_until(server_done, client_done);
  ASSERT_TRUE(client_done);
  ASSERT_TRUE(server_done);
  EXPECT_EQ(ended, "closed");
  const auto all = messages();
  ASSERT_EQ(echoed.size(), 2 * all.size());
  for (std::size_t i = 0; i < echoed.size(); ++i) EXPECT_EQ(echoed[i], all[i % all.size()]) << "message " << i;
}

// A peer that sends its last message and ends the connection without a close frame, the message and
// its FIN both in the server's socket before its reactor looks: the message is read, and the next
// read ends at once, since the kernel counts the FIN as a byte left (drained_read.hpp). Without that
// count the next read would wait for an event that had come already.
TEST(DrainedTcpStream, APeerThatEndsTheConnectionWithItsLastMessageEndsTheRead) {
  Pair p;
  const int server_fd = p.server.native_handle();
  std::string ended;
  bool server_done = false, client_done = false;
  asio::co_spawn(p.ioc, echo_server(std::move(p.server), ended, server_done), asio::detached);
  // The client's socket outlives its coroutine: closed, it would answer the server's echo with a
  // reset, an event of its own that would end the server's read whatever the count said.
  websocket::stream<tcp::socket> ws(std::move(p.client));
  asio::co_spawn(
      p.ioc,
      [&]() -> asio::awaitable<void> {
        co_await ws.async_handshake("127.0.0.1", "/", asio::use_awaitable);
        // Blocking, so that the io_context (this thread) does not run until both are in the socket.
        ws.write(asio::buffer(std::string("last")));
        ws.next_layer().shutdown(tcp::socket::shutdown_send);
        pollfd fd{server_fd, POLLRDHUP, 0};
        EXPECT_EQ(::poll(&fd, 1, 5000), 1);
        client_done = true;
      },
      asio::detached);
  p.run_until(server_done, client_done);
  ASSERT_TRUE(client_done);
  ASSERT_TRUE(server_done);
  EXPECT_NE(ended, "closed");
  EXPECT_FALSE(ended.empty());
}

TEST(DrainedTcpStream, AReadFillsTheFirstPieceWithRoom) {
  Pair p;
  DrainedTcpStream stream(beast::tcp_stream(std::move(p.server)));
  asio::write(p.client, asio::buffer(std::string("abcdefgh")));
  char first[4], second[8];
  const std::array<asio::mutable_buffer, 3> pieces{asio::mutable_buffer(), asio::buffer(first), asio::buffer(second)};
  std::size_t got = 99;
  bool done = false;
  stream.async_read_some(pieces, [&](boost::system::error_code ec, std::size_t n) {
    EXPECT_FALSE(ec);
    got = n;
    done = true;
  });
  p.ioc.run_for(std::chrono::seconds(5));
  ASSERT_TRUE(done);
  EXPECT_EQ(got, 4u);
  EXPECT_EQ(std::string(first, 4), "abcd");

  // No room at all: done at once, with nothing read (as Asio's own read of an empty sequence).
  const std::array<asio::mutable_buffer, 2> none{};
  done = false;
  stream.async_read_some(none, [&](boost::system::error_code ec, std::size_t n) {
    EXPECT_FALSE(ec);
    got = n;
    done = true;
  });
  p.ioc.restart();
  p.ioc.run_for(std::chrono::seconds(5));
  ASSERT_TRUE(done);
  EXPECT_EQ(got, 0u);
}
