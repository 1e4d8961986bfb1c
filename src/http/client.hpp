// Messages: an HTTP/1.1 client for model servers (http:// on loopback, https:// for remote ones,
// verified against the system's CAs). The response body of a 2xx answer is handed over piece by
// piece as it arrives (streamed completions); other answers are collected (up to 64 KB: the read
// stops there, and the answer is `truncated`, not complete). With a
// ConnectionPool, http:// connections are kept alive between requests to the same server.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "http/message.hpp"

namespace leuria::http {

// Kept-alive http:// connections, by server, for the next request to it: a turn's request then
// leaves at once, with no connect and no accept on the server's side (bench scenario 5). At most
// `per_server` idle connections each (the most recently used is taken first); an idle connection
// the server closes is closed at once (a wait for it to become readable, not a timer). https://
// connections are not kept. Every fetch of one executor may share one pool; not thread-safe.
class ConnectionPool {
 public:
  explicit ConnectionPool(std::size_t per_server = 4);
  ~ConnectionPool();
  ConnectionPool(const ConnectionPool&) = delete;
  ConnectionPool& operator=(const ConnectionPool&) = delete;
  std::size_t idle() const;  // idle connections held, every server
  struct State;              // http/client.cpp

 private:
  friend State& pool_state(ConnectionPool&);
  std::shared_ptr<State> state_;  // shared with the idle connections' waits, which may outlive us
};

struct ClientRequest {
  std::string method = "GET";
  std::string url;
  std::vector<Header> headers;
  std::string body;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds read_timeout{300};  // between two pieces of the answer
  // Awaited before each read of a streamed (on_data) body: the caller's backpressure. The read
  // timeout counts from when it returns, so a pause of ours is not the server's silence.
  std::function<boost::asio::awaitable<void>()> before_read;
  // Asked first, when set: before_read is awaited only if this says the caller must wait (a plain
  // call per read instead of a coroutine frame, on a stream that is flowing).
  std::function<bool()> must_wait;
  // Where to take a kept-alive connection from and give it back to; none: one connection a request.
  std::shared_ptr<ConnectionPool> pool;
};

// How a request failed to get a whole answer, for callers whose sentence depends on it (a server that
// is down is not one that went silent). `ClientResult::error` says why in plain words. A request
// stopped with Abort comes back as whatever its closed socket gave (unreachable, no_answer or
// broke_off): the caller that aborted knows it did.
enum class Failure : unsigned char {
  none,         // an answer's head came (status); the body came whole, or the caller stopped reading it
  bad_request,  // nothing was sent: not an http(s) URL, a field that could be read as two, TLS setup
  unreachable,  // the server's name was not found, or the connection or TLS handshake failed
  no_answer,    // connected, then the request could not be sent or no answer's head came (silence, a hang-up)
  broke_off,    // the head came, then the body was cut short, refused by the parser, or went silent
};

struct ClientResult {
  unsigned status = 0;  // 0 when no answer came (failure and error say why)
  Failure failure = Failure::none;
  // Why, in plain words, when failure is not none. For broke_off only the reason ("bad chunk",
  // "The server stopped answering"): the caller's own sentence says that the answer broke off.
  std::string error;
  std::string body;     // non-2xx answers, or 2xx answers read without on_data: its first 64 KB
  std::string content_type;  // the answer's Content-Type, as it came (empty without one)
  bool complete = false;  // the whole body was received
  // `body` holds the first 64 KB of a longer body, whose rest was not read (a proxy's endless error
  // page must not hold the request). A caller that needs more passes on_data.
  bool truncated = false;
};

// Lets another coroutine stop a request: the socket is closed and fetch returns.
class Abort {
 public:
  void abort();
  bool aborted() const { return aborted_; }
  // Registers how to stop the request; if it was already aborted, stops it at once.
  void on_abort(std::function<void()> f) {
    closer_ = std::move(f);
    if (aborted_ && closer_) closer_();
  }
  // Whether a closer is registered: fetch leaves none behind, however it ended (its closers point
  // into its frame).
  bool armed() const { return static_cast<bool>(closer_); }

 private:
  bool aborted_ = false;
  std::function<void()> closer_;
};

// The request as it goes on the wire, in one piece: the request line (HTTP/1.1), Host, User-Agent,
// the caller's headers in order (one replaces an earlier field of the same name, Host and
// User-Agent included), Content-Length when there is a body or the method is POST, the body.
// A caller's Content-Length or Transfer-Encoding is dropped: the body's framing is ours. An error
// (a sentence naming the field, never its value, which may be an API key) for a method or name that
// is not an HTTP token, or a target, host or value with a line break or NUL in it: such a request
// could be read as two.
boost::system::result<std::string, std::string> request_text(std::string_view method, std::string_view target,
                                                              std::string_view host,
                                                              const std::vector<Header>& headers,
                                                              std::string_view body);

// on_data: body pieces of a 2xx answer; return false to stop reading. Each attempt (a kept-alive
// connection that turned out closed is retried on a new one) calls a copy of it, kept beside its reads:
// keep what it collects outside it (a pointer or a reference), not in its own captures.
boost::asio::awaitable<ClientResult> fetch(boost::asio::any_io_executor ex, ClientRequest req,
                                           std::function<bool(std::string_view)> on_data = {},
                                           std::shared_ptr<Abort> abort = {});

// An answer read whole, a 2xx body too (fetch keeps only 64 KB of a body it doesn't hand over): the 2xx
// body is collected into `body` up to about `max_bytes`, and past that the read stops and `too_large`
// says so. A non-2xx answer's body is fetch's own.
struct WholeResult : ClientResult {
  bool too_large = false;  // we stopped reading it; nothing broke
};
boost::asio::awaitable<WholeResult> fetch_whole(boost::asio::any_io_executor ex, ClientRequest req,
                                                std::size_t max_bytes);

}  // namespace leuria::http
