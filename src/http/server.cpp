#include "http/server.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <functional>
#include <optional>
#include <spdlog/spdlog.h>

#include "http/read_deadline.hpp"
#include "http/request_head.hpp"
#include "http/request_parser.hpp"
#include "http/websocket.hpp"
#include "transport/drained_read.hpp"

namespace leuria::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;

namespace {

Response plain_error(unsigned status, std::string_view message) {
  Response r;
  r.status = status;
  r.set("Content-Type", "application/json");
  r.body = std::string("{\"error\":\"") + std::string(message) + "\"}";
  r.close = true;
  return r;
}

// A request the parser rejected (as opposed to a connection that closed or timed out).
bool is_parse_error(const beast::error_code& ec) {
  return ec.category() == bhttp::make_error_code(bhttp::error::bad_target).category() &&
         ec != bhttp::error::end_of_stream && ec != bhttp::error::partial_message;
}

// The status line and the handler's headers, without the framing ones or the blank line.
void append_head(std::string& out, const Response& res, unsigned version) {
  const auto reason = bhttp::obsolete_reason(static_cast<bhttp::status>(res.status));
  out += version >= 11 ? "HTTP/1.1 " : "HTTP/1.0 ";
  out += std::to_string(res.status);
  out += ' ';
  out.append(reason.data(), reason.size());
  out += "\r\n";
  for (const auto& h : res.headers) {
    out += h.name;
    out += ": ";
    out += h.value;
    out += "\r\n";
  }
}

// A whole answer as the bytes that go out: one buffer, one write. Beast's serializer walked its
// buffer sequences for about 40% of the engine's instructions per /health (callgrind); the framing
// is the same as Beast's prepare_payload gives: Content-Length, none for 1xx/204/304, and
// Connection: close (1.1) or keep-alive (1.0) as the connection's fate needs.
std::string serialize(const Response& res, bool keep, unsigned version) {
  const bool no_body = res.status / 100 == 1 || res.status == 204 || res.status == 304;
  std::string out;
  out.reserve(160 + res.body.size() + 48 * res.headers.size());
  append_head(out, res, version);
  if (!no_body) {
    out += "Content-Length: ";
    out += std::to_string(res.body.size());
    out += "\r\n";
  }
  if (version >= 11 && !keep) out += "Connection: close\r\n";
  if (version < 11 && keep) out += "Connection: keep-alive\r\n";
  out += "\r\n";
  if (!no_body) out += res.body;
  return out;
}

// One non-blocking write of `data` on the socket's descriptor: how much the socket took now (0 when its
// buffer is full). `ec` is set only for a real failure (the peer is gone). The socket must be in
// non-blocking mode. A descriptor, not the stream: the ChunkWriter keeps its own, so a token's write
// touches only the writer (bench scenario 7).
std::size_t write_at_once(int fd, std::string_view data, beast::error_code& ec) {
  for (;;) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) return static_cast<std::size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) ec.assign(errno, boost::system::system_category());
    return 0;
  }
}

// Sends all of `data` (the only write in flight on the socket): at once when the socket's buffer
// has room, as it has for most answers and events, else the rest under the deadline. The deadline's
// timer is armed only for a write that must wait: armed for every answer, it cost a timerfd_settime
// system call whenever it became the earliest timer, which on a kept-alive connection was every
// answer (bench scenario 1). Needs the socket in non-blocking mode (serve_connection sets it).
asio::awaitable<beast::error_code> send_all(beast::tcp_stream& stream, std::string_view data,
                                            std::chrono::milliseconds timeout) {
  beast::error_code ec;
  std::size_t done = 0;
  if (stream.socket().non_blocking()) {
    done = write_at_once(stream.socket().native_handle(), data, ec);
    if (ec || done == data.size()) co_return ec;
  }
  stream.expires_after(timeout);
  auto [wec, n] = co_await asio::async_write(stream, asio::buffer(data.data() + done, data.size() - done),
                                             asio::as_tuple(asio::use_awaitable));
  stream.expires_never();
  co_return wec;
}

asio::awaitable<bool> write(beast::tcp_stream& stream, Response& res, bool keep_alive, unsigned version,
                            std::chrono::milliseconds timeout) {
  const bool keep = keep_alive && !res.close;
  const std::string out = serialize(res, keep, version);
  const beast::error_code ec = co_await send_all(stream, out, timeout);
  co_return !ec && keep;
}

// After refusing a request whose body is still arriving, closing at once would reset the connection
// and the client could lose our answer. Like nginx's lingering close: stop sending, then read and
// discard for a short while.
asio::awaitable<void> linger_close(beast::tcp_stream& stream) {
  beast::error_code ec;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  char sink[16384];
  stream.expires_after(std::chrono::seconds(2));
  for (std::size_t total = 0; total < 64 * 1024 * 1024;) {
    auto [rec, n] = co_await stream.async_read_some(asio::buffer(sink), asio::as_tuple(asio::use_awaitable));
    if (rec) break;
    total += n;
  }
}

// A streamed body as HTTP/1.1 chunks. `head`, when given, is the answer's head, sent with the first
// chunk (or the end) rather than on its own.
class ChunkWriter final : public BodyWriter {
 public:
  ChunkWriter(beast::tcp_stream& stream, std::chrono::milliseconds timeout, std::string head = {})
      : stream_(stream),
        timeout_(timeout),
        out_(std::move(head)),
        fd_(stream.socket().native_handle()),
        non_blocking_(stream.socket().non_blocking()) {}
  asio::awaitable<bool> write(std::string data) override {
    if (failed_ || ended_) co_return false;
    if (data.empty()) co_return true;  // an empty chunk would end the body
    frame(data);
    const bool sent = co_await send();
    co_return sent;
  }
  asio::awaitable<bool> write_last(std::string data) override {
    if (failed_ || ended_) co_return false;
    if (!data.empty()) frame(data);  // an empty chunk would be a second last chunk
    out_ += "0\r\n\r\n";
    ended_ = true;
    const bool sent = co_await send();
    co_return sent;
  }
  // The chunk is built in out_ itself, after room for its size line: no copy, and one buffer of
  // the stream's touched per token, not two (bench scenario 7).
  std::string* begin_now() override {
    if (failed_ || ended_ || sending_ || !out_.empty() || !non_blocking_) return nullptr;
    out_.assign(kRoom, '\0');
    return &out_;
  }
  bool end_now() override {
    const std::size_t size = out_.size() - kRoom;
    if (size == 0) {
      out_.clear();
      return true;
    }
    char hex[16];
    const auto len = static_cast<std::size_t>(std::to_chars(hex, hex + sizeof hex, size, 16).ptr - hex);
    const std::size_t start = kRoom - 2 - len;
    std::memcpy(out_.data() + start, hex, len);
    out_[kRoom - 2] = '\r';
    out_[kRoom - 1] = '\n';
    out_ += "\r\n";
    const std::string_view chunk(out_.data() + start, out_.size() - start);
    const std::size_t done = send_at_once(chunk);
    if (failed_) {
      out_.clear();
      return false;
    }
    if (done < chunk.size()) {
      out_.erase(0, start + done);  // held for flush(), which the reader's coroutine makes under the deadline
      return false;
    }
    // The buffer is kept for the next token, unless a burst made it large.
    if (out_.capacity() > kKeptBuffer)
      std::string().swap(out_);
    else
      out_.clear();
    return true;
  }
  // The head, if it has not gone yet, goes in the same write.
  bool write_last_now(std::string& data) override {
    if (failed_ || ended_ || sending_ || !non_blocking_) return false;
    if (!data.empty()) frame(data);
    out_ += "0\r\n\r\n";
    ended_ = true;
    const std::size_t done = send_at_once(out_);
    if (failed_)
      out_.clear();
    else
      out_.erase(0, done);  // what the socket did not take, for flush()
    return true;
  }
  asio::awaitable<bool> flush() override {
    if (failed_) co_return false;
    if (out_.empty()) co_return true;
    const bool sent = co_await send();
    co_return sent;
  }
  // The last chunk, unless it was written, and anything still held: whether the whole answer went out.
  asio::awaitable<bool> finish() {
    if (failed_) co_return false;
    if (!ended_) {
      const bool sent = co_await write_last({});
      co_return sent;
    }
    const bool flushed = co_await flush();
    co_return flushed;
  }

 private:
  // The chunk's framing built here, one buffer per write: Beast's chunk buffer sequences cost more
  // instructions than the event they carry (callgrind). `data` is freed once framed: a slow reader's
  // write waits holding one copy, not two.
  void frame(std::string& data) {
    char size[20];
    const char* end = std::to_chars(size, size + sizeof size, data.size(), 16).ptr;
    out_.reserve(out_.size() + static_cast<std::size_t>(end - size) + data.size() + 4);
    out_.append(size, static_cast<std::size_t>(end - size)).append("\r\n").append(data).append("\r\n");
    std::string().swap(data);
  }
  asio::awaitable<bool> send() {
    std::string bytes;
    bytes.swap(out_);
    sending_ = true;
    const beast::error_code ec = co_await send_all(stream_, bytes, timeout_);
    sending_ = false;
    failed_ = static_cast<bool>(ec);
    co_return !failed_;
  }

  // write_at_once on the descriptor kept here: the writes that don't wait touch only this writer, not
  // the stream's socket state (two more cold reads per token with 1,000 streams, bench scenario 7). The
  // descriptor stays valid while this writer lives: the socket is closed by its stream's destructor,
  // after this writer's, or by a send() that timed out, which sets failed_ (and meanwhile sending_).
  // How much went; failed_ set when the peer is gone.
  std::size_t send_at_once(std::string_view data) {
    beast::error_code ec;
    const std::size_t done = write_at_once(fd_, data, ec);
    if (ec) failed_ = true;
    return done;
  }

  static constexpr std::size_t kKeptBuffer = 4096;
  static constexpr std::size_t kRoom = 18;  // a chunk's size line: up to 16 hex digits and CRLF
  beast::tcp_stream& stream_;
  std::chrono::milliseconds timeout_;
  std::string out_;  // what goes out with the next write: the head until it has gone, or what end_now left
  int fd_;
  bool non_blocking_;  // set by serve_connection: the writes that don't wait need it
  bool failed_ = false;
  bool ended_ = false;
  bool sending_ = false;  // a write is in flight (out_ is empty meanwhile)
};

// An event stream's headers now (its reader waits for them); an answer that reuses the connection
// (an MCP answer) sends its headers with its first chunk, and its result with the body's end: one
// write per call, where there were three (bench scenario 4). Then the body as chunks as the handler
// produces them. Returns whether the connection may serve another request: the answer asked for
// it (Response::reuse_after_stream), went out whole, and the client keeps the connection.
asio::awaitable<bool> write_streamed(beast::tcp_stream& stream, Response& res, bool keep_alive, unsigned version,
                                     std::chrono::milliseconds timeout) {
  if (res.reuse_after_stream && keep_alive && !res.close && version >= 11) {
    std::string head;
    head.reserve(160 + 48 * res.headers.size());
    append_head(head, res, version);
    head += "Transfer-Encoding: chunked\r\n\r\n";
    ChunkWriter writer(stream, timeout, std::move(head));
    co_await res.stream(writer);
    const bool complete = co_await writer.finish();
    co_return complete;
  }
  // An event stream: its end is the connection's end.
  bhttp::response<bhttp::empty_body> head;
  head.version(version);
  head.result(res.status);
  for (auto& h : res.headers) head.insert(h.name, h.value);
  head.keep_alive(false);
  head.chunked(true);
  bhttp::response_serializer<bhttp::empty_body> sr(head);
  stream.expires_after(timeout);
  auto [ec, n] = co_await bhttp::async_write_header(stream, sr, asio::as_tuple(asio::use_awaitable));
  stream.expires_never();
  if (ec) co_return false;
  // Nagle's algorithm back on. Its reader only reads, so the reader's kernel acknowledges at once and
  // an event is never held for long; while one write is unacknowledged, the next ones merge into one
  // packet. A burst of tokens written one event at a time with TCP_NODELAY cost the engine a loopback
  // delivery each: 8.0 → 11.4 µs per token (bench scenario 2, burst).
  boost::system::error_code ignored;
  stream.socket().set_option(asio::ip::tcp::no_delay(false), ignored);
  ChunkWriter writer(stream, timeout);
  co_await res.stream(writer);
  co_await writer.finish();
  co_return false;
}

namespace websocket = beast::websocket;

// Room for one read beyond a head's limit: read_head's reads are 16 KB, Beast's body reads 64 KB.
constexpr std::size_t kReadRoom = 64 * 1024;

// What read_head found at the start of the buffer.
struct Head {
  enum class Kind { complete, malformed, too_large, gone };
  Kind kind = Kind::gone;
  std::size_t end = 0;  // complete: the head's length
};

// Marks the slot busy again however read_head ends.
struct BusyOnExit {
  transport::Slot& slot;
  ~BusyOnExit() { slot.busy(); }
};

// Reads until the buffer holds a whole head, checking each byte once as it arrives, so Beast's
// parser only ever sees complete heads with clean line endings. Deadlines: a new connection has
// the header timeout from its start; a kept-alive one has the idle timeout until its next request's
// first byte, then the header timeout. Meanwhile the slot may be reclaimed for a new connection.
asio::awaitable<Head> read_head(beast::tcp_stream& stream, beast::flat_buffer& buffer, const ServerLimits& limits,
                                bool fresh, transport::Slot& slot, ReadDeadline& deadline) {
  std::function<void()> close = [&stream] { stream.close(); };
  slot.waiting(std::move(close));
  BusyOnExit busy{slot};
  struct ClearOnExit {
    ReadDeadline& d;
    ~ClearOnExit() { d.clear(); }
  } clear_deadline{deadline};
  stream.expires_never();  // the deadline is `deadline`'s (lazy), not a timer per read
  bool started = fresh || buffer.size() > 0;
  if (started)
    deadline.set(limits.header_timeout);
  else
    deadline.set(limits.idle_timeout);
  std::size_t pos = 0;
  for (;;) {
    const auto data = buffer.data();
    const std::string_view bytes(static_cast<const char*>(data.data()), data.size());
    const HeadScan scan = scan_head(bytes, pos);
    if (scan.result == HeadScan::Result::malformed) co_return Head{Head::Kind::malformed};
    if (scan.result == HeadScan::Result::complete) {
      if (scan.end > limits.header_bytes) co_return Head{Head::Kind::too_large};
      co_return Head{Head::Kind::complete, scan.end};
    }
    if (bytes.size() >= limits.header_bytes) co_return Head{Head::Kind::too_large};
    const auto space = buffer.prepare(16 * 1024);
    // Drained: when the kernel says nothing remains, the next read waits for the client instead of
    // trying first (the empty `recvmsg` that followed every request; transport/drained_read.hpp).
    auto [ec, n] = co_await transport::async_read_drained(stream.socket(), space, asio::as_tuple(asio::use_awaitable));
    if (ec || slot.reclaimed()) co_return Head{Head::Kind::gone};
    buffer.commit(n);
    if (!started) {
      started = true;
      deadline.set(limits.header_timeout);
    }
  }
}

enum class BufferedBody { parsed, too_large, malformed };

// Parses what of the body is already in the buffer (an MCP call's few hundred bytes come with its
// head): Beast's async_read, given a body it need not wait for, posts its completion, a trip through
// the scheduler and a poll of the reactor per request (bench scenario 4). What is missing is read
// by read_body.
BufferedBody parse_buffered_body(RequestParser& parser, beast::flat_buffer& buffer) {
  parser.eager(true);
  while (!parser.is_done() && buffer.size() > 0) {
    beast::error_code ec;
    const std::size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == bhttp::error::need_more) break;
    if (ec == bhttp::error::body_limit) return BufferedBody::too_large;
    if (ec) return BufferedBody::malformed;
    if (used == 0) break;
  }
  return BufferedBody::parsed;
}

// Reads the rest of a request's body. Meanwhile, as while it sends its head, the peer holds a slot
// without giving us any work, so at the cap the slot may be reclaimed: slow bodies (R-U-Dead-Yet,
// slowhttptest -B) must not shut real clients out until the body deadline. Reclaimed: operation_aborted.
asio::awaitable<beast::error_code> read_body(beast::tcp_stream& stream, beast::flat_buffer& buffer,
                                             RequestParser& parser,
                                             std::chrono::milliseconds timeout, transport::Slot& slot) {
  std::function<void()> close = [&stream] { stream.close(); };
  slot.waiting(std::move(close));
  BusyOnExit busy{slot};
  stream.expires_after(timeout);
  auto [ec, n] = co_await bhttp::async_read(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
  if (slot.reclaimed()) co_return asio::error::operation_aborted;
  co_return ec;
}

}  // namespace

asio::awaitable<void> serve_connection(asio::ip::tcp::socket socket, Handler handler, ServerLimits limits,
                                       transport::Slot slot) {
  beast::tcp_stream stream(std::move(socket));
  beast::error_code nb;
  stream.socket().non_blocking(true, nb);  // send_all's first try; the async operations don't mind
  ReadDeadline deadline(stream.get_executor(), [&stream] { stream.close(); });
  // Bounded: Beast limits a head, but not a chunked body's size lines or its trailer fields, which it
  // reads whole into this buffer; unbounded, a client could grow it for the whole body deadline. A
  // head needs 16 KB and one read's room; a body passes through a read at a time. Full is 400.
  beast::flat_buffer buffer(limits.header_bytes + kReadRoom);
  // One Request for the connection's requests, recycled between them with its buffers (recycle_request).
  // Recycled before the wait for the next head: an idle connection holds only what recycling keeps,
  // not the last request's body and fields.
  Request request;
  std::vector<Header> spare;
  for (bool fresh = true;; fresh = false) {
    if (!fresh) recycle_request(request, spare);
    const Head head = co_await read_head(stream, buffer, limits, fresh, slot, deadline);
    if (head.kind == Head::Kind::gone) co_return;

    RequestParser parser(request, &spare);  // Beast parses; the parts land in `request`
    parser.header_limit(static_cast<std::uint32_t>(limits.header_bytes));
    parser.body_limit(limits.body_bytes);
    HeadRefusal refused;
    bool body_too_large = false;
    if (head.kind == Head::Kind::too_large) {
      refused = {431, "header over the byte limit"};
    } else if (head.kind == Head::Kind::malformed) {
      refused = {400, "bare CR or LF, or a folded line"};
    } else {
      // The whole head is in the buffer: Beast parses it without reading.
      beast::error_code ec;
      const auto bytes = buffer.data();
      const asio::const_buffer head_bytes(bytes.data(), head.end);
      const std::size_t used = parser.put(head_bytes, ec);
      parser.take_fields();  // also when Beast stopped before the head's end (a length over the limit)
      if (ec == bhttp::error::body_limit) {
        body_too_large = true;
      } else if (ec || !parser.is_header_done()) {
        spdlog::debug("event=http.parser_refused error=\"{}\"", ec.message());
        refused = {400, "refused by Beast's parser"};
      } else {
        buffer.consume(used);
      }
      if (!refused.status) {
        // Fields are all there even when the length was over the limit: the framing is checked first.
        refused = check_head(parser.version(), request.headers, limits.header_fields);
      }
    }
    if (!refused.status && !body_too_large && !parser.is_done()) {
      const BufferedBody got = parse_buffered_body(parser, buffer);
      if (got == BufferedBody::too_large) body_too_large = true;
      else if (got == BufferedBody::malformed) refused = {400, "malformed body"};
    }
    if (!refused.status && !body_too_large && !parser.is_done()) {
      const beast::error_code ec = co_await read_body(stream, buffer, parser, limits.body_timeout, slot);
      if (ec == bhttp::error::body_limit)
        body_too_large = true;
      else if (is_parse_error(ec))
        refused = {400, "malformed body"};
      else if (ec)
        co_return;  // closed, reset or too slow
    }
    if (refused.status) {
      // No second request is read from these bytes: whatever follows may be a smuggled one.
      spdlog::debug("event=http.refused status={} reason=\"{}\"", refused.status, refused.reason);
      // No conditional expression: GCC 12 miscompiles class-type temporaries of a ?: in coroutines.
      Response refusal = plain_error(400, "Malformed HTTP request");
      if (refused.status == 431) refusal = plain_error(431, "Request headers too large");
      co_await write(stream, refusal, false, 11, limits.write_timeout);
      co_await linger_close(stream);
      co_return;
    }

    if (body_too_large) {
      // The header is complete: let the handler's gate decide how to answer (silence, CORS). What of
      // a chunked body came before the limit is not the request's.
      request.refused = 413;
      request.body.clear();
      Response response = co_await handler(request);
      response.close = true;
      co_await write(stream, response, false, parser.version(), limits.write_timeout);
      co_await linger_close(stream);
      co_return;
    }

    const unsigned version = parser.version();
    // Both depend on a Connection header; without one (most requests) the answers are known.
    const bool connection_header = request.header("Connection").has_value();
    const bool keep_alive = connection_header ? http::keep_alive(request, version) : version >= 11;
    const bool upgrade = connection_header && is_websocket_upgrade(request, version);
    request.websocket = upgrade;
    request.peer = stream.socket().native_handle();
    // Beast's handshake reads Beast's message: built for an upgrade only, and before the handler,
    // which gets the Request to read, so the handshake sees the request as it came.
    std::optional<bhttp::request<bhttp::string_body>> handshake;
    if (upgrade) handshake = to_beast(request, version);
    stream.expires_never();  // the handler may long-poll
    Response response = co_await handler(request);
    // A stream that ends the connection may last hours: no deadline timer left behind. An answer that
    // reuses it keeps the lazy deadline (cleared while the request is served): stopping it, then
    // setting it again for the next request, reprogrammed the timer twice a call (bench scenario 4).
    if ((response.stream && !response.reuse_after_stream) || (upgrade && response.upgrade)) deadline.stop();
    if (upgrade && response.upgrade) {
      // The WebSocket reads through buffers of its own and may stay open for hours: the read buffer
      // (16 KB reserved for a head; a client sends no frame before the handshake's answer) goes back
      // now, before the WebSocket's objects are made, which can then take its place on the heap
      // instead of lying 16 KB apart from the next connection's (bench scenarios 8 and 11).
      buffer.clear();
      buffer.shrink_to_fit();
      co_await run_websocket(stream, *handshake, response, limits);
      co_return;
    }
    if (response.stream) {
      if (!response.reuse_after_stream) {
        // An event stream may stay open for hours and reads no further request: the read buffer
        // (16 KB reserved for a head) goes back now (bench scenario 8).
        buffer.shrink_to_fit();
      }
      if (co_await write_streamed(stream, response, keep_alive, version, limits.write_timeout)) continue;
      beast::error_code ignored;
      stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      co_return;
    }
    if (!co_await write(stream, response, keep_alive, version, limits.write_timeout)) {
      beast::error_code ignored;
      stream.socket().shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
      co_return;
    }
  }
}

}  // namespace leuria::http
