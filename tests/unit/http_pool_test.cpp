// Kept-alive connections to model servers (http::ConnectionPool in http/client.cpp), against a raw
// loopback server that counts its connections and answers each request as the test says: a kept
// connection is used again, one the server closes is dropped (while idle, or as the request goes
// out: then the request goes again on a new one), an answer the caller stopped reading early is
// finished before its connection is kept, and `Connection: close` or a full pool keeps nothing.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/client.hpp"

using namespace leuria;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

asio::awaitable<void> pause(std::chrono::milliseconds ms) {
  asio::steady_timer t(co_await asio::this_coro::executor, ms);
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<void> send(tcp::socket& s, std::string bytes) {
  co_await asio::async_write(s, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
}

const std::string kOk = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

// What the server does with request `nth` (0-based, every connection) on connection `conn`.
enum class Answer { ok, ok_then_close, close_unanswered, ok_connection_close, stream_done_then_end };

struct Server {
  asio::io_context& ioc;
  tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::function<Answer(int conn, int nth)> script;
  int connections = 0;
  int requests = 0;

  Server(asio::io_context& io, std::function<Answer(int, int)> s) : ioc(io), script(std::move(s)) {
    asio::co_spawn(ioc, accept_loop(), asio::detached);
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/v1/x"; }

  asio::awaitable<void> accept_loop() {
    for (;;) {
      auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      asio::co_spawn(ioc, serve(std::move(socket), connections++), asio::detached);
    }
  }

  asio::awaitable<void> serve(tcp::socket s, int conn) {
    std::string in;
    char buf[4096];
    for (;;) {
      while (in.find("\r\n\r\n") == std::string::npos) {
        auto [ec, n] = co_await s.async_read_some(asio::buffer(buf), asio::as_tuple(asio::use_awaitable));
        if (ec) co_return;
        in.append(buf, n);
      }
      in.erase(0, in.find("\r\n\r\n") + 4);  // GET requests: no body
      switch (script(conn, requests++)) {
        case Answer::ok: co_await send(s, kOk); break;
        case Answer::ok_then_close: co_await send(s, kOk); co_return;
        case Answer::close_unanswered: co_return;
        case Answer::ok_connection_close:
          co_await send(s, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
          co_return;
        case Answer::stream_done_then_end:
          // A model's stream: the caller stops at [DONE]; the body's end comes a little later.
          co_await send(s, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n6\r\ndone!\n\r\n");
          co_await pause(std::chrono::milliseconds(20));
          co_await send(s, "0\r\n\r\n");
          break;
      }
    }
  }
};

// Runs `n` fetches of `url` one after another with `pool`, letting the loop run `gap` between them.
// A 2xx answer's body is in `body` (fetch hands it to on_data).
std::vector<http::ClientResult> fetch_in_turn(asio::io_context& ioc, std::shared_ptr<http::ConnectionPool> pool,
                                              const std::string& url, int n, bool stop_early = false,
                                              std::chrono::milliseconds gap = std::chrono::milliseconds(50)) {
  std::vector<http::ClientResult> out;
  asio::co_spawn(ioc, [&]() -> asio::awaitable<void> {
    for (int i = 0; i < n; ++i) {
      http::ClientRequest req;
      req.url = url;
      req.read_timeout = std::chrono::seconds(5);
      req.pool = pool;
      std::string body;
      auto on_data = [&](std::string_view d) {
        body += d;
        return !(stop_early && d.find("done!") != std::string_view::npos);
      };
      auto r = co_await http::fetch(ioc.get_executor(), req, on_data);
      if (r.status / 100 == 2) r.body = body;
      out.push_back(std::move(r));
      co_await pause(gap);
    }
    ioc.stop();
  }, asio::detached);
  ioc.run_for(std::chrono::seconds(10));
  return out;
}

// One test's run: `n` requests in turn, through a pool of its own (or none), to a server answering by `script`.
struct Trial {
  asio::io_context ioc;
  Server server;
  std::shared_ptr<http::ConnectionPool> pool;
  std::vector<http::ClientResult> results;
  Trial(std::function<Answer(int, int)> script, int n, bool pooled = true, bool stop_early = false)
      : server(ioc, std::move(script)), pool(pooled ? std::make_shared<http::ConnectionPool>() : nullptr) {
    results = fetch_in_turn(ioc, pool, server.url(), n, stop_early);
  }
};

}  // namespace

TEST(HttpPool, AKeptConnectionIsUsedAgain) {
  Trial t([](int, int) { return Answer::ok; }, 3);
  ASSERT_EQ(t.results.size(), 3u);
  for (auto& r : t.results) {
    EXPECT_EQ(r.status, 200u);
    EXPECT_EQ(r.body, "ok");
  }
  EXPECT_EQ(t.server.connections, 1);
  EXPECT_EQ(t.pool->idle(), 1u);
}

TEST(HttpPool, WithoutAPoolEachRequestHasItsOwnConnection) {
  Trial t([](int, int) { return Answer::ok; }, 3, /*pooled=*/false);
  ASSERT_EQ(t.results.size(), 3u);
  EXPECT_EQ(t.server.connections, 3);
}

TEST(HttpPool, AConnectionTheServerClosesWhileIdleIsDropped) {
  Trial t([](int, int) { return Answer::ok_then_close; }, 2);
  ASSERT_EQ(t.results.size(), 2u);
  for (auto& r : t.results) EXPECT_EQ(r.status, 200u) << r.error;
  EXPECT_EQ(t.server.connections, 2);
  EXPECT_EQ(t.server.requests, 2);  // the closed one was never written to
  EXPECT_EQ(t.pool->idle(), 0u);    // the second was dropped when the server closed it too
}

TEST(HttpPool, ARequestTheServerDropsOnAKeptConnectionGoesAgainOnANewOne) {
  // The server's idle timeout fires as the request arrives: it closes without a word. Nothing was
  // answered, so the request is sent once more, on a new connection, and the caller sees one answer.
  Trial t([](int conn, int nth) { return conn == 0 && nth == 1 ? Answer::close_unanswered : Answer::ok; }, 2);
  ASSERT_EQ(t.results.size(), 2u);
  EXPECT_EQ(t.results[1].status, 200u) << t.results[1].error;
  EXPECT_EQ(t.results[1].body, "ok");
  EXPECT_EQ(t.server.connections, 2);
  EXPECT_EQ(t.server.requests, 3);
}

TEST(HttpPool, ANewConnectionThatIsDroppedIsNotTriedAgain) {
  // Only a kept connection's silence is forgiven: a new one's is the server's answer.
  Trial t([](int, int) { return Answer::close_unanswered; }, 1);
  ASSERT_EQ(t.results.size(), 1u);
  EXPECT_EQ(t.results[0].status, 0u);
  EXPECT_EQ(t.results[0].failure, http::Failure::no_answer) << t.results[0].error;
  EXPECT_EQ(t.server.requests, 1);
}

TEST(HttpPool, AnAnswerStoppedAtItsLastEventIsFinishedThenKept) {
  Trial t([](int, int) { return Answer::stream_done_then_end; }, 2, /*pooled=*/true, /*stop_early=*/true);
  ASSERT_EQ(t.results.size(), 2u);
  for (auto& r : t.results) {
    EXPECT_EQ(r.status, 200u) << r.error;
    EXPECT_FALSE(r.complete);  // the caller stopped: it got its answer before the body's end
  }
  EXPECT_EQ(t.server.connections, 1);
  EXPECT_EQ(t.pool->idle(), 1u);
}

TEST(HttpPool, ConnectionCloseKeepsNothing) {
  Trial t([](int, int) { return Answer::ok_connection_close; }, 2);
  ASSERT_EQ(t.results.size(), 2u);
  for (auto& r : t.results) EXPECT_EQ(r.status, 200u) << r.error;
  EXPECT_EQ(t.server.connections, 2);
  EXPECT_EQ(t.pool->idle(), 0u);
}

TEST(HttpPool, APoolKeepsAtMostItsSizePerServer) {
  asio::io_context ioc;
  Server server(ioc, [](int, int) { return Answer::ok; });
  auto pool = std::make_shared<http::ConnectionPool>(2);
  int done = 0;
  for (int i = 0; i < 5; ++i) {  // at once: five connections
    http::ClientRequest req;
    req.url = server.url();
    req.pool = pool;
    asio::co_spawn(ioc, http::fetch(ioc.get_executor(), req), [&](std::exception_ptr, http::ClientResult r) {
      EXPECT_EQ(r.status, 200u) << r.error;
      if (++done == 5) ioc.stop();
    });
  }
  ioc.run_for(std::chrono::seconds(10));
  EXPECT_EQ(done, 5);
  EXPECT_EQ(server.connections, 5);
  EXPECT_EQ(pool->idle(), 2u);
}
