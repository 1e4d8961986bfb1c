// The HTTP client's body reading (http/client.cpp), against a raw loopback server that writes
// scripted bytes: what a read brings is handed over at once, a piece that arrives alone is handed
// over before the next one comes, and the ends of a body (its length, its last chunk, the close,
// a cut) are told apart.
#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <exception>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "http/client.hpp"

using namespace leuria;
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

std::string chunked(const std::string& piece) {
  char size[32];
  std::snprintf(size, sizeof size, "%zx\r\n", piece.size());
  return size + piece + "\r\n";
}

const std::string kChunkedHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";

// One request, answered by `script`, which writes to the accepted socket as it likes.
struct Exchange {
  using Script = std::function<asio::awaitable<void>(tcp::socket&)>;
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  std::vector<std::string> pieces;  // each on_data call
  http::ClientResult result;
  std::chrono::seconds read_timeout{5};
  std::function<asio::awaitable<void>()> before_read;  // a full reader's wait, before each body read
  std::function<bool()> must_wait;                     // asked first: whether to await before_read
  std::size_t stop_after = 0;                          // on_data says stop at this piece (0: never)
  std::size_t throw_at = 0;                            // on_data throws at this piece (0: never)
  bool streamed = true;                                // pass on_data (false: fetch keeps the body)
  std::shared_ptr<http::Abort> abort;                  // passed to fetch, when set
  std::exception_ptr thrown;                           // what fetch's coroutine ended with
  std::chrono::steady_clock::duration took{};          // from the start to fetch's completion

  void run(Script script) {
    asio::co_spawn(ioc, [this, script]() -> asio::awaitable<void> {
      auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      char request[4096];
      co_await socket.async_read_some(asio::buffer(request), asio::as_tuple(asio::use_awaitable));
      co_await script(socket);
    }, asio::detached);
    http::ClientRequest req;
    req.url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/stream";
    req.read_timeout = read_timeout;
    req.before_read = before_read;
    req.must_wait = must_wait;
    std::function<bool(std::string_view)> on_data = [this](std::string_view d) {
      pieces.emplace_back(d);
      if (throw_at != 0 && pieces.size() == throw_at) throw std::runtime_error("the caller failed");
      return stop_after == 0 || pieces.size() < stop_after;
    };
    if (!streamed) on_data = nullptr;
    const auto t0 = std::chrono::steady_clock::now();
    asio::co_spawn(ioc, http::fetch(ioc.get_executor(), req, on_data, abort),
                   [this, t0](std::exception_ptr e, http::ClientResult r) {
      thrown = e;
      result = std::move(r);
      took = std::chrono::steady_clock::now() - t0;
    });
    ioc.run_for(std::chrono::seconds(10));
  }
  std::string body() const {
    std::string all;
    for (auto& p : pieces) all += p;
    return all;
  }
};

asio::awaitable<void> send(tcp::socket& s, const std::string& bytes) {
  co_await asio::async_write(s, asio::buffer(bytes), asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<void> pause(std::chrono::milliseconds ms) {
  asio::steady_timer t(co_await asio::this_coro::executor, ms);
  co_await t.async_wait(asio::as_tuple(asio::use_awaitable));
}

// A paced model's answer: `n` chunks `data: <i>`, `gap` apart, then the body's end. What it sends is
// added to *sent, when given.
asio::awaitable<void> trickle(tcp::socket& s, int n, std::chrono::milliseconds gap, std::string* sent) {
  co_await send(s, kChunkedHead);
  for (int i = 0; i < n; ++i) {
    const std::string line = "data: " + std::to_string(i) + "\n\n";
    if (sent) *sent += line;
    co_await send(s, chunked(line));
    co_await pause(gap);
  }
  co_await send(s, "0\r\n\r\n");
}

}  // namespace

TEST(HttpClientBody, ChunksThatArriveTogetherAreHandedOverTogether) {
  // A model's burst: 200 tokens, one chunk each, in one write. They were once handed over one
  // chunk at a time, each through the scheduler, each written to the page on its own.
  std::string tokens, wire = kChunkedHead;
  for (int i = 0; i < 200; ++i) {
    const std::string line = "data: {\"t\":" + std::to_string(i) + "}\n\n";
    tokens += line;
    wire += chunked(line);
  }
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, wire);
    co_await pause(std::chrono::milliseconds(50));
    co_await send(s, "0\r\n\r\n");
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.result.status, 200u);
  EXPECT_EQ(x.body(), tokens);
  EXPECT_EQ(x.pieces.size(), 1u);
}

TEST(HttpClientBody, APieceThatArrivesAloneIsHandedOverBeforeTheNextComes) {
  // The trailing CRLF of a chunk is only read with the next chunk's header: a reader that waited
  // for it would hold every token of a paced stream until the next one.
  Exchange x;
  std::size_t seen_before_second = 0;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, kChunkedHead + chunked("data: one\n\n"));
    for (int i = 0; i < 200 && x.pieces.empty(); ++i) co_await pause(std::chrono::milliseconds(10));
    seen_before_second = x.pieces.size();
    co_await send(s, chunked("data: two\n\n") + "0\r\n\r\n");
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(seen_before_second, 1u);
  EXPECT_EQ(x.body(), "data: one\n\ndata: two\n\n");
}

TEST(HttpClientBody, ABodyLargerThanTheBufferArrivesWhole) {
  std::string big;
  for (int i = 0; big.size() < 100 * 1024; ++i) big += std::to_string(i) + ",";
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big);
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), big);
  EXPECT_GE(x.pieces.size(), 7u);  // 16 KB at most per piece
}

TEST(HttpClientBody, ABodyThatRunsToTheCloseIsComplete) {
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\nhello ");
    co_await pause(std::chrono::milliseconds(20));
    co_await send(s, "world");
    s.close();
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), "hello world");
}

TEST(HttpClientBody, AChunkedBodyCutShortIsAnErrorAfterWhatCame) {
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, kChunkedHead + chunked("data: kept\n\n") + "40\r\npartial");
    s.close();
  });
  EXPECT_FALSE(x.result.complete);
  EXPECT_EQ(x.result.status, 200u);
  EXPECT_EQ(x.result.failure, http::Failure::broke_off);
  // Only the reason: the caller's sentence says that the answer broke off.
  EXPECT_FALSE(x.result.error.empty());
  EXPECT_EQ(x.result.error.find("broke off"), std::string::npos) << x.result.error;
  EXPECT_TRUE(x.body().starts_with("data: kept\n\n")) << x.body();
}

TEST(HttpClientBody, AnErrorAnswersBodyIsKeptNotStreamed) {
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 500 Internal Server Error\r\nContent-Length: 20\r\n\r\n{\"error\":\"no model\"}");
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.result.status, 500u);
  EXPECT_EQ(x.result.body, "{\"error\":\"no model\"}");
  EXPECT_TRUE(x.pieces.empty());
}

TEST(HttpClientBody, PiecesThatTrickleInArriveEachOnItsOwn) {
  // A paced model: each read empties the socket, and the next waits for it to be readable.
  Exchange x;
  std::string expected;
  x.run([&](tcp::socket& s) { return trickle(s, 20, std::chrono::milliseconds(5), &expected); });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), expected);
  EXPECT_EQ(x.pieces.size(), 20u);
}

TEST(HttpClientBody, AServerThatFallsSilentMidAnswerTimesOut) {
  Exchange x;
  x.read_timeout = std::chrono::seconds(1);
  const auto t0 = std::chrono::steady_clock::now();
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, kChunkedHead + chunked("data: before\n\n"));
    co_await pause(std::chrono::milliseconds(2000));
  });
  const auto took = std::chrono::steady_clock::now() - t0;
  EXPECT_FALSE(x.result.complete);
  EXPECT_EQ(x.result.failure, http::Failure::broke_off);
  EXPECT_EQ(x.result.error, "The server stopped answering");
  EXPECT_EQ(x.body(), "data: before\n\n");
  EXPECT_GE(took, std::chrono::milliseconds(900));
}

TEST(HttpClientBody, TheDeadlineMovesOnWithEachPiece) {
  // A slow model: each piece comes well within the read timeout, the whole answer takes longer than it.
  Exchange x;
  x.read_timeout = std::chrono::seconds(1);
  std::string expected;
  x.run([&](tcp::socket& s) { return trickle(s, 8, std::chrono::milliseconds(300), &expected); });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), expected);
}

TEST(HttpClientBody, WaitingForAFullReaderIsNotTheServersSilence) {
  // Backpressure: the page's reader is full, so the client waits before it reads on, longer than the
  // read timeout. The server has sent its answer whole meanwhile; the wait must not count against it.
  Exchange x;
  x.read_timeout = std::chrono::seconds(1);
  int waits = 0;
  x.before_read = [&]() -> asio::awaitable<void> {
    if (waits++ == 0) co_await pause(std::chrono::milliseconds(1500));
  };
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, kChunkedHead + chunked("data: one\n\n"));
    co_await pause(std::chrono::milliseconds(100));
    co_await send(s, chunked("data: two\n\n") + "0\r\n\r\n");
    co_await pause(std::chrono::milliseconds(3000));  // the connection stays open, silent
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), "data: one\n\ndata: two\n\n");
  EXPECT_GE(waits, 1);
}

TEST(HttpClientBody, AFullReaderIsWaitedForOnlyWhenMustWaitSaysSo) {
  // The body's reads run as one operation that goes back to fetch's coroutine only to wait: asked
  // before every read, a wait happens only when must_wait says so, and the reads go on after it.
  Exchange x;
  int asked = 0, waits = 0;
  x.must_wait = [&] { return ++asked % 2 == 0; };
  x.before_read = [&]() -> asio::awaitable<void> {
    ++waits;
    co_await pause(std::chrono::milliseconds(20));
  };
  std::string expected;
  x.run([&](tcp::socket& s) { return trickle(s, 6, std::chrono::milliseconds(50), &expected); });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_EQ(x.body(), expected);
  EXPECT_GE(asked, 6);  // once before each read
  EXPECT_EQ(waits, asked / 2);
}

TEST(HttpClientBody, ACallerThatStopsReadsNoFurther) {
  // on_data said stop (the stream's last event came): the answer is not complete, and no error.
  Exchange x;
  x.stop_after = 2;
  x.run([&](tcp::socket& s) { return trickle(s, 4, std::chrono::milliseconds(50), nullptr); });
  EXPECT_FALSE(x.result.complete);
  EXPECT_EQ(x.result.failure, http::Failure::none);
  EXPECT_EQ(x.result.error, "");
  EXPECT_EQ(x.body(), "data: 0\n\ndata: 1\n\n");
}

TEST(HttpClientBody, WhatTheCallerThrowsEndsTheFetchNotTheLoop) {
  // on_data runs from the body's read operation, outside fetch's coroutine: what it throws must still
  // reach the coroutine's completion (the request's one wrapper), not leave io_context::run().
  Exchange x;
  x.throw_at = 2;
  EXPECT_NO_THROW(x.run([&](tcp::socket& s) { return trickle(s, 4, std::chrono::milliseconds(50), nullptr); }));
  ASSERT_TRUE(x.thrown);
  EXPECT_THROW(std::rethrow_exception(x.thrown), std::runtime_error);
  EXPECT_EQ(x.pieces.size(), 2u);
}

TEST(HttpClientBody, AnExceptionFromTheCallerLeavesNoCloserOnTheAbort) {
  // The Abort's closer points at fetch's connection, a local of its coroutine: an exception from a read
  // (the caller's on_data threw) skipped its unregistering, and a later abort() (the turn's cancel)
  // closed a destroyed socket. Under ASan the abort() below is a use after free without the fix.
  Exchange x;
  x.throw_at = 2;
  x.abort = std::make_shared<http::Abort>();
  x.run([&](tcp::socket& s) { return trickle(s, 4, std::chrono::milliseconds(50), nullptr); });
  ASSERT_TRUE(x.thrown);
  EXPECT_FALSE(x.abort->armed());
  EXPECT_NO_THROW(x.abort->abort());
}

TEST(HttpClientBody, ARequestAbortedBeforeItStartsSendsNothing) {
  // A literal address needs no lookup, so nothing suspends before the connect: an abort that came first
  // found no socket to close, and the request went out anyway.
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0)};
  bool connected = false;
  acceptor.async_accept([&](boost::system::error_code ec, tcp::socket) { connected = !ec; });
  auto abort = std::make_shared<http::Abort>();
  abort->abort();
  http::ClientRequest req;
  req.url = "http://127.0.0.1:" + std::to_string(acceptor.local_endpoint().port()) + "/stream";
  std::optional<http::ClientResult> result;
  asio::co_spawn(ioc, http::fetch(ioc.get_executor(), req, {}, abort), [&](std::exception_ptr, http::ClientResult r) {
    result = std::move(r);
    asio::post(ioc, [&] { acceptor.close(); });  // a connection would have been accepted by now
  });
  ioc.run_for(std::chrono::seconds(5));
  ASSERT_TRUE(result);
  EXPECT_FALSE(connected);
  EXPECT_EQ(result->failure, http::Failure::unreachable);
  EXPECT_EQ(result->error, "Stopped");
  EXPECT_FALSE(abort->armed());
}

TEST(HttpClientBody, AWholeBodyPastWhatIsKeptIsTruncatedNotComplete) {
  // A 2xx answer read without on_data (a /models list): its first 64 KB only, and said so. It was
  // once marked complete, and a long list of models read as a broken one.
  Exchange x;
  x.streamed = false;
  const std::string big(100 * 1024, 'm');
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 200 OK\r\nContent-Length: " + std::to_string(big.size()) + "\r\n\r\n" + big);
  });
  EXPECT_EQ(x.result.status, 200u);
  EXPECT_FALSE(x.result.complete);
  EXPECT_TRUE(x.result.truncated);
  EXPECT_EQ(x.result.body.size(), 64u * 1024);
  EXPECT_TRUE(x.pieces.empty());
}

TEST(HttpClientBody, ABodyOfExactlyWhatIsKeptIsComplete) {
  Exchange x;
  x.streamed = false;
  const std::string whole(64 * 1024, 'w');
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 500 Oops\r\nContent-Length: " + std::to_string(whole.size()) + "\r\n\r\n" + whole);
  });
  EXPECT_TRUE(x.result.complete) << x.result.error;
  EXPECT_FALSE(x.result.truncated);
  EXPECT_EQ(x.result.body, whole);
}

TEST(HttpClientBody, AnEndlessErrorPageDoesNotHoldTheRequest) {
  // A proxy answering 500 with a chunked body that never ends: once 64 KB are kept the read stops,
  // where it once read on for as long as the proxy wrote.
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 500 Internal Server Error\r\nTransfer-Encoding: chunked\r\n\r\n");
    const std::string piece = chunked(std::string(4096, 'e'));
    for (;;) {  // a write at a time, until the client hangs up
      auto [ec, n] = co_await asio::async_write(s, asio::buffer(piece), asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
    }
  });
  EXPECT_EQ(x.result.status, 500u);
  EXPECT_TRUE(x.result.truncated);
  EXPECT_FALSE(x.result.complete);
  EXPECT_EQ(x.result.body.size(), 64u * 1024);
  EXPECT_LT(x.took, std::chrono::seconds(3));
}

// How a request failed is a kind the caller can branch on, not a prefix of the sentence: a server that
// is down, one that took the connection and said nothing, and a request that could not be made.
namespace {

http::ClientResult fetch_once(const std::string& url, std::chrono::seconds read_timeout = std::chrono::seconds(5)) {
  asio::io_context ioc;
  http::ClientRequest req;
  req.url = url;
  req.read_timeout = read_timeout;
  http::ClientResult out;
  asio::co_spawn(ioc, http::fetch(ioc.get_executor(), req), [&](std::exception_ptr, http::ClientResult r) { out = std::move(r); });
  ioc.run_for(std::chrono::seconds(10));
  return out;
}

}  // namespace

TEST(HttpClientFailure, NotAnHttpUrlIsABadRequest) {
  auto r = fetch_once("ftp://127.0.0.1/x");
  EXPECT_EQ(r.status, 0u);
  EXPECT_EQ(r.failure, http::Failure::bad_request);
  EXPECT_EQ(r.error, "Not an http(s) URL: ftp://127.0.0.1/x");
}

TEST(HttpClientFailure, AClosedPortIsUnreachable) {
  asio::io_context ioc;
  tcp::acceptor a(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
  const auto port = a.local_endpoint().port();
  a.close();  // nothing listens there now
  auto r = fetch_once("http://127.0.0.1:" + std::to_string(port) + "/v1/models");
  EXPECT_EQ(r.status, 0u);
  EXPECT_EQ(r.failure, http::Failure::unreachable);
  EXPECT_TRUE(r.error.starts_with("Could not connect to http://127.0.0.1:")) << r.error;
}

TEST(HttpClientFailure, AServerThatHangsUpWithoutAnAnswerGaveNoAnswer) {
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    s.close();
    co_return;
  });
  EXPECT_EQ(x.result.status, 0u);
  EXPECT_EQ(x.result.failure, http::Failure::no_answer);
  EXPECT_TRUE(x.result.error.starts_with("No answer: ")) << x.result.error;
}

TEST(HttpClientFailure, AServerSilentBeforeItsHeadGaveNoAnswer) {
  Exchange x;
  x.read_timeout = std::chrono::seconds(1);
  x.run([&](tcp::socket&) -> asio::awaitable<void> { co_await pause(std::chrono::milliseconds(2000)); });
  EXPECT_EQ(x.result.status, 0u);
  EXPECT_EQ(x.result.failure, http::Failure::no_answer);
}

TEST(HttpClientFailure, AWholeAnswerIsNoFailureWhateverItsStatus) {
  Exchange x;
  x.run([&](tcp::socket& s) -> asio::awaitable<void> {
    co_await send(s, "HTTP/1.1 404 Not Found\r\nContent-Length: 2\r\n\r\nno");
  });
  EXPECT_EQ(x.result.status, 404u);
  EXPECT_EQ(x.result.failure, http::Failure::none);
  EXPECT_TRUE(x.result.complete);
}
