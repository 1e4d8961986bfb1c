#include "http/websocket.hpp"

#include <algorithm>
#include <array>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/websocket.hpp>
#include <memory>
#include <spdlog/spdlog.h>

#include "core/plain_text.hpp"
#include "http/read_deadline.hpp"
#include "transport/drained_stream.hpp"

namespace leuria::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
namespace websocket = beast::websocket;

namespace {

// RFC 6455 (7.4.2) defines close codes up to 4999; Beast rejects the undefined ones below 3000 (1002)
// but accepts and echoes any code from 5000 up.
constexpr std::uint16_t kLastCloseCode = 4999;

// A message's read buffer that grew past this for a large message is given back after it.
constexpr std::size_t kKeptReadBuffer = 64 * 1024;

// The upgrade's answer and a closing handshake: Beast's timer for both, and the close's own bound.
std::chrono::milliseconds handshake_timeout(const ServerLimits& limits) {
  return std::min(limits.write_timeout, limits.idle_timeout);
}

// Beast does the framing and fails the connection with the RFC's code for what it refuses (1002 for
// unmasked frames, reserved bits, unknown opcodes, bad control frames and close codes, 1007 for
// invalid UTF-8, 1009 over read_message_max). What it lets through is refused here: binary messages
// (the protocol is JSON text: 1003), a text message whose last frame is empty and whose UTF-8 is
// cut short (Beast checks the end of a message only in a frame with data: 1007), and close codes
// from 5000 up (1002).
//
// A message goes out as one frame written straight to the socket (write_now), not by Beast's write,
// whose completion takes a trip through the scheduler and a poll of the reactor (bench scenario 6).
// Only when Beast cannot be writing: no write of ours in flight, no ping of ours, no close begun, and
// since our last read completed, no ping or close heard (Beast answers those from within its read,
// and a read completes only once its answer is written) and no write or ping of Beast's ended (its
// end hands the write lock to a read waiting to send the close frame that fails a peer). While a
// frame of ours is half-sent (the socket took part of it, flush() sends the rest), a frame Beast
// would write would land inside it:
// so a ping or close heard then drops the socket before Beast answers, our own ping waits, and a
// close drops the socket instead of a closing handshake. The one write left to Beast then is the
// close frame with which its read fails a peer that broke the protocol; that peer alone would read
// it cut into our frame, just before its socket closes.
//
// The idle timeout is kept here, not by Beast: Beast's moves its timer at every read, a cancel and a
// new wait, and so two timerfd_settime system calls and a cancelled handler per message (bench
// scenario 6, strace). Here a frame heard only moves a lazy deadline (ReadDeadline); when it passes,
// half the idle timeout after the last frame heard, a ping goes out, and when the next half passes
// too with nothing heard, the socket is dropped, as Beast's keep-alive pings did.
//
// A page that stopped reading but still sends (a pong now and then) is heard, so the idle deadline
// alone would keep it, and the engine's write to it stuck in a full socket, for ever. So a frame heard
// while a write of ours has waited longer than the write timeout drops the socket instead (a page that
// sends nothing is left to the idle deadline); and once a close has begun, frames heard no longer move
// the deadline, which the close sets to its own bound (the handshake's: Beast's timer for it starts
// only once the close frame may go, which a stuck write keeps from happening).
class BeastWebSocket final : public WebSocket {
 public:
  BeastWebSocket(websocket::stream<transport::DrainedTcpStream>& ws, const ServerLimits& limits)
      : ws_(ws), half_idle_(limits.idle_timeout / 2), write_timeout_(limits.write_timeout),
        close_timeout_(handshake_timeout(limits)), quiet_(ws.get_executor(), [this] { on_quiet(); }, half_idle_) {
    ws_.control_callback([this](websocket::frame_type kind, beast::string_view) {
      heard();
      if (kind == websocket::frame_type::pong) return;
      *beast_may_write_ = true;  // a pong or the close's echo, written by Beast's read
      if (!held_.empty()) {
        spdlog::debug("event=websocket.control_while_half_sent note=\"dropped: the answer would cut our frame\"");
        drop();
        return;
      }
      if (kind == websocket::frame_type::close) check_close_code();
    });
    heard();
    beast::error_code ec;
    socket().non_blocking(true, ec);  // write_now's one try
  }
  ~BeastWebSocket() override { ws_.control_callback(); }
  BeastWebSocket(const BeastWebSocket&) = delete;
  BeastWebSocket& operator=(const BeastWebSocket&) = delete;

  asio::awaitable<std::optional<std::string>> read() override {
    // Frame by frame (a read_some ends at a frame's end at the latest), so that a large message
    // arriving slowly counts as heard while it arrives, as it did with Beast's timer.
    buffer_.clear();
    std::size_t n = 0;
    do {
      auto [ec, got] = co_await ws_.async_read_some(buffer_, 0, asio::as_tuple(asio::use_awaitable));
      if (ec) co_return std::nullopt;
      *beast_may_write_ = false;  // whatever Beast wrote during this read has been written
      n += got;
      heard();
      if (!socket().is_open()) co_return std::nullopt;  // dropped by heard(): a write waited too long
    } while (!ws_.is_message_done());
    if (!ws_.got_text()) {
      spdlog::debug("event=websocket.binary_refused bytes={}", n);
      co_await close_with(websocket::close_code::unknown_data);
      co_return std::nullopt;
    }
    const auto data = buffer_.cdata();
    std::string text(static_cast<const char*>(data.data()), data.size());
    if (buffer_.capacity() > kKeptReadBuffer) buffer_ = beast::flat_buffer();
    if (!core::is_utf8(text)) {
      spdlog::debug("event=websocket.bad_utf8 bytes={}", n);
      co_await close_with(websocket::close_code::bad_payload);
      co_return std::nullopt;
    }
    co_return text;
  }
  asio::awaitable<bool> write(std::string text) override {
    if (!held_.empty()) {
      const bool flushed = co_await flush();
      if (!flushed) co_return false;
    }
    if (ready_now()) {
      if (write_now(std::move(text))) co_return true;
      const bool flushed = co_await flush();
      co_return flushed;
    }
    ws_.text(true);
    begin_write();
    auto [ec, n] = co_await ws_.async_write(asio::buffer(text), asio::as_tuple(asio::use_awaitable));
    writing_ = false;
    *beast_may_write_ = true;
    if (ec && !closing_) fail();
    co_return !ec;
  }
  asio::awaitable<void> close() override { co_await close_with(websocket::close_code::normal); }

  bool ready_now() const override {
    return held_.empty() && !failed_ && !writing_ && !*ping_in_flight_ && !*beast_may_write_ && !closing_ && ws_.is_open();
  }

  bool write_now(std::string text) override {
    unsigned char head[10];
    const std::size_t head_size = frame_head(text.size(), head);
    const std::array<asio::const_buffer, 2> frame{asio::buffer(head, head_size), asio::buffer(text)};
    beast::error_code ec;
    const std::size_t sent = socket().send(frame, 0, ec);
    if (ec && ec != asio::error::would_block && ec != asio::error::try_again) {
      fail();
      return false;
    }
    if (sent == head_size + text.size()) return true;
    // The rest waits for flush(): the frame's head first, if even that did not all go.
    if (sent < head_size) held_.assign(reinterpret_cast<const char*>(head) + sent, head_size - sent);
    held_.append(text, sent < head_size ? 0 : sent - head_size, std::string::npos);
    return false;
  }

  asio::awaitable<bool> flush() override {
    if (failed_) co_return false;
    if (held_.empty()) co_return true;
    begin_write();
    auto [ec, n] = co_await asio::async_write(socket(), asio::buffer(held_), asio::as_tuple(asio::use_awaitable));
    writing_ = false;
    held_ = std::string();
    if (ec) fail();
    if (!ec && ping_owed_ && !closing_ && !*ping_in_flight_) send_ping();
    ping_owed_ = false;
    co_return !ec;
  }

 private:
  asio::ip::tcp::socket& socket() { return beast::get_lowest_layer(ws_).socket(); }

  // A final text frame's head, unmasked (a server's): 2 bytes, 4 with a 16-bit length, 10 with a 64-bit one.
  static std::size_t frame_head(std::size_t size, unsigned char* out) {
    out[0] = 0x81;  // FIN, text
    if (size < 126) {
      out[1] = static_cast<unsigned char>(size);
      return 2;
    }
    if (size <= 0xFFFF) {
      out[1] = 126;
      out[2] = static_cast<unsigned char>(size >> 8);
      out[3] = static_cast<unsigned char>(size);
      return 4;
    }
    out[1] = 127;
    for (int i = 0; i < 8; ++i) out[2 + i] = static_cast<unsigned char>(static_cast<std::uint64_t>(size) >> (56 - 8 * i));
    return 10;
  }

  // Without a close frame: the peer hears the connection end.
  void drop() {
    closing_ = true;
    beast::get_lowest_layer(ws_).close();
  }

  // A write failed: the peer is gone, and the socket is closed now, which ends a read waiting on it.
  // The read alone might not end: a reset queued behind the page's last message is not counted by
  // the kernel (transport/drained_read.hpp), so after that message the read waits for an event that
  // will not come, and Beast, once a write of its own has failed, closes nothing.
  void fail() {
    failed_ = true;
    drop();
  }

  void begin_write() {
    writing_ = true;
    write_began_ = std::chrono::steady_clock::now();
  }

  void heard() {
    if (closing_) return;  // the close's bound stands (close_with)
    if (writing_ && std::chrono::steady_clock::now() - write_began_ > write_timeout_) {
      spdlog::debug("event=websocket.write_timeout note=\"the page sends but does not read\"");
      drop();
      return;
    }
    pinged_ = false;
    ping_owed_ = false;
    quiet_.set(half_idle_);
  }

  // Half the idle timeout passed with no frame heard: ping the first time; drop the socket the
  // second. A ping waits behind a write in flight (Beast queues it; flush() sends it after a
  // half-sent frame of ours); a peer that does not read therefore never gets it, and is dropped all
  // the same. During a close the deadline is the close's own (close_with), and its expiry drops the
  // socket: Beast's handshake timer normally ends the close as soon, but it is armed only once the
  // close frame may go, and a close waiting behind a write of Beast's stuck in a full socket (a page
  // that stays connected and stopped reading) has none.
  void on_quiet() {
    if (!socket().is_open()) return;  // dropped already
    if (!pinged_) {
      pinged_ = true;
      quiet_.set(half_idle_);
      if (closing_) return;  // the peer's close heard (check_close_code): no ping after it
      if (!held_.empty())
        ping_owed_ = true;  // a ping now would cut our half-sent frame
      else if (!*ping_in_flight_)
        send_ping();
      return;
    }
    spdlog::debug("event=websocket.idle_timeout");
    drop();  // nothing more to say: no close frame on the dropped socket
  }

  void send_ping() {
    *ping_in_flight_ = true;
    // The handler may run after this object is gone (the socket's end cancels it): it touches
    // only the shared flags.
    ws_.async_ping({}, [flag = ping_in_flight_, may = beast_may_write_](beast::error_code) {
      *flag = false;
      *may = true;
    });
  }

  // One close only, whoever asks first (the handler's writer, its reader, or the server at the end).
  // A second close returns at once, while the first may still wait: the server's close at the end
  // comes only after the handler's coroutines have ended (web::PageSocketLink waits for its writer).
  asio::awaitable<void> close_with(websocket::close_code code) {
    if (closing_) co_return;
    // Without a close frame: when Beast's stream is closed or failed (a ping of its own that failed
    // closes nothing), or when the frame would cut our half-sent one.
    if (!ws_.is_open() || !held_.empty()) {
      drop();
      co_return;
    }
    closing_ = true;
    pinged_ = true;  // the deadline's next expiry drops the socket (on_quiet)
    quiet_.set(close_timeout_);
    const websocket::close_reason reason(code);
    auto [ec] = co_await ws_.async_close(reason, asio::as_tuple(asio::use_awaitable));
    // A close that failed (its frame not sent: the peer is gone) leaves the socket open; a read may
    // still wait on it (fail()).
    if (ec) drop();
  }

  // Called by Beast's read with the peer's close frame, before Beast echoes its code. Beast's echo
  // can't be changed: for a code above 4999 the 1002 frame is written here (unless a frame of ours
  // is half-written: then nothing is), and the echo then fails on the socket shut for sending.
  void check_close_code() {
    if (closing_ || ws_.reason().code <= kLastCloseCode) return;
    closing_ = true;
    spdlog::debug("event=websocket.bad_close_code code={}", ws_.reason().code);
    beast::error_code ec;
    if (!writing_) {
      static constexpr unsigned char kProtocolError[] = {0x88, 0x02, 0x03, 0xEA};  // FIN + close, 2 bytes, 1002
      socket().send(asio::buffer(kProtocolError), 0, ec);  // non-blocking since the constructor
    }
    socket().shutdown(asio::ip::tcp::socket::shutdown_send, ec);
  }

  websocket::stream<transport::DrainedTcpStream>& ws_;
  beast::flat_buffer buffer_;  // the message being read; kept between messages
  const std::chrono::milliseconds half_idle_;
  // A write of ours waiting longer ends the socket at the next frame heard; a close begun ends it
  // after close_timeout_ at the latest.
  const std::chrono::milliseconds write_timeout_;
  const std::chrono::milliseconds close_timeout_;
  std::chrono::steady_clock::time_point write_began_{};  // while writing_
  bool pinged_ = false;  // a ping went out (or waits to) since the last frame heard
  std::shared_ptr<bool> ping_in_flight_ = std::make_shared<bool>(false);
  bool writing_ = false;        // a write of ours is in flight (Beast's, or flush()'s)
  // Beast may be writing of its own accord: set when a ping or close is heard and when a write or ping
  // of Beast's ends; cleared when a read completes. Shared with the ping's handler.
  std::shared_ptr<bool> beast_may_write_ = std::make_shared<bool>(false);
  bool ping_owed_ = false;      // on_quiet's ping, held back behind a half-sent frame
  std::string held_;            // the rest of a frame write_now half-sent, for flush()
  bool failed_ = false;         // a write of ours failed: the socket is gone
  bool closing_ = false;
  ReadDeadline quiet_;  // last: destroyed first, so on_quiet never runs on a half-destroyed object
};

// Beast's timers only for the upgrade's answer and the closing handshake (see BeastWebSocket).
websocket::stream_base::timeout websocket_timeouts(const ServerLimits& limits) {
  websocket::stream_base::timeout t{};
  // The 101 answer, and the closing handshake: after our close frame Beast reads (and drops) what
  // the peer still sends until its close frame arrives, which a peer that stopped reading never sends.
  t.handshake_timeout = handshake_timeout(limits);
  t.idle_timeout = websocket::stream_base::none();
  t.keep_alive_pings = false;
  return t;
}

}  // namespace

asio::awaitable<void> run_websocket(beast::tcp_stream& stream, const bhttp::request<bhttp::string_body>& req,
                                    Response& res, const ServerLimits& limits) {
  websocket::stream<transport::DrainedTcpStream> ws(std::move(stream));
  ws.set_option(websocket_timeouts(limits));
  ws.read_message_max(limits.body_bytes);
  ws.set_option(websocket::stream_base::decorator([&res](websocket::response_type& r) {
    for (auto& h : res.headers) r.set(h.name, h.value);
  }));
  auto [ec] = co_await ws.async_accept(req, asio::as_tuple(asio::use_awaitable));
  if (ec) co_return;
  BeastWebSocket socket(ws, limits);
  co_await res.upgrade(socket);
  co_await socket.close();
}

}  // namespace leuria::http
