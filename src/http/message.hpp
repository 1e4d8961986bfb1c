// Messages: an HTTP request and response as the adapters see them. No Beast here, so adapters
// and their tests stay free of it; http/server.cpp converts at the edge.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leuria::http {

struct Header {
  std::string name;
  std::string value;
};

struct Request {
  std::string method;  // "GET", "POST", …
  std::string target;  // as sent
  std::string path;    // target without the query
  std::string query;   // after '?', without it
  std::vector<Header> headers;
  std::string body;
  // Non-zero when the server refused the body (413) before reading it: the handler passes the
  // request through its gate and answers with this status.
  unsigned refused = 0;
  bool websocket = false;  // a WebSocket upgrade request
  int peer = -1;           // the connection's socket while the handler runs, for peer_gone()

  // The first header of that name (case-insensitive).
  std::optional<std::string_view> header(std::string_view name) const;
  std::size_t header_count(std::string_view name) const;
  // The token of "Authorization: Bearer <token>", or empty.
  std::string_view bearer() const;
};

// Whether the client has closed the connection its request came on (or reset it), asked while a
// handler waits (a long-poll): a client that gives up on a request closes its connection, as a
// page's fetch does when aborted, or half-closed it (a client that shut its sending side counts as
// gone too). Never blocks.
bool peer_gone(const Request& req);

// Writes a streamed body (server-sent events). write() returns false once the peer is gone or
// too slow (a write that doesn't finish within the server's write timeout).
class BodyWriter {
 public:
  virtual ~BodyWriter() = default;
  virtual boost::asio::awaitable<bool> write(std::string data) = 0;
  // The answer's last piece, sent with the body's end in one write where the writer can (an MCP
  // answer's result: one system call, and one wakeup of its reader, not two). Nothing after it.
  virtual boost::asio::awaitable<bool> write_last(std::string data) {
    const bool ok = co_await write(std::move(data));
    co_return ok;
  }
  // A write that doesn't wait, made for a reader while its coroutine is parked (an event stream's
  // tokens, core::Subscriber's direct writer), built in the writer's own buffer. begin_now() gives
  // that buffer to append the piece of the body to, or null when no such write can be made now (a
  // write in flight, something held back). end_now() then sends what was appended: what the socket
  // takes at once, the rest held for flush(). It returns whether all of it went (false too once the
  // peer is gone: flush() then says so). Nothing else is written between the two.
  virtual std::string* begin_now() { return nullptr; }
  virtual bool end_now() { return false; }
  virtual boost::asio::awaitable<bool> flush() { co_return true; }
  // write_last without waiting, made by whoever has the answer while the coroutine is parked (an MCP
  // answer, written as the page's answer is read). True when it took `data` (moved from it): sent
  // whole, or the rest held for flush(), which then says whether all of it went. False when it can't
  // be made now (a write in flight, or the end already written): `data` is left for write_last.
  virtual bool write_last_now(std::string&) { return false; }
};

// A WebSocket after the upgrade: text messages in and out. read() returns nullopt once the socket
// is closed (by either side); write() false when it can't be sent.
class WebSocket {
 public:
  virtual ~WebSocket() = default;
  virtual boost::asio::awaitable<std::optional<std::string>> read() = 0;
  virtual boost::asio::awaitable<bool> write(std::string text) = 0;
  virtual boost::asio::awaitable<void> close() = 0;
  // A write that doesn't wait, as BodyWriter's: made by whoever has a message while the writer is
  // parked (a channel's pong, as its ping is read). ready_now(): one may be made now. write_now sends
  // what the socket takes at once and holds the rest for flush(); it returns whether all of it went
  // (false too once the peer is gone: flush() then says so). Until flush() ends, nothing else is written.
  virtual bool ready_now() const { return false; }
  virtual bool write_now(std::string) { return false; }
  virtual boost::asio::awaitable<bool> flush() { co_return true; }
};

struct Response {
  unsigned status = 200;
  std::vector<Header> headers;
  std::string body;
  bool close = false;  // close the connection after this response
  // When set, the headers go out at once and this writes the body (chunked), then the connection
  // closes, unless reuse_after_stream. `body` is ignored.
  std::function<boost::asio::awaitable<void>(BodyWriter&)> stream;
  // A streamed answer to one request (an MCP reply): once it is whole, the connection may serve the
  // client's next request, so a kept-alive client pays no new connection per call. Event streams
  // keep the default: their end is the connection's end, which is what readers watch for.
  bool reuse_after_stream = false;
  // For a WebSocket upgrade request: when set, the server accepts the upgrade and runs this on the
  // socket; when not, the response itself is sent (a refusal before the upgrade).
  std::function<boost::asio::awaitable<void>(WebSocket&)> upgrade;

  void set(std::string name, std::string value);
  std::optional<std::string_view> header(std::string_view name) const;
};

using Handler = std::function<boost::asio::awaitable<Response>(Request&)>;

bool iequals(std::string_view a, std::string_view b);

// A JSON answer: Content-Type application/json, not cached.
Response json_response(unsigned status, const boost::json::value& body);
// The same, for a body already written as JSON text.
Response json_text_response(unsigned status, std::string body);

// The value of a query parameter, percent-decoded; nullopt when absent.
std::optional<std::string> query_param(std::string_view query, std::string_view name);

}  // namespace leuria::http
