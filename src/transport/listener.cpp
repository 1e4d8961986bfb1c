#include "transport/listener.hpp"

#include "transport/drained_read.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/v6_only.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <chrono>
#include <map>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

namespace leuria::transport {

namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

boost::system::result<tcp::acceptor, std::string> listen_v4(asio::any_io_executor ex, std::uint16_t port) {
  tcp::acceptor acceptor(ex);
  tcp::endpoint ep(asio::ip::make_address_v4("127.0.0.1"), port);
  boost::system::error_code ec;
  acceptor.open(ep.protocol(), ec);
  if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) acceptor.bind(ep, ec);
  if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec == asio::error::address_in_use)
    return "Port " + std::to_string(port) + " is already in use; stop the program using it or choose another port with --port.";
  if (ec == asio::error::access_denied)
    return "Not allowed to listen on port " + std::to_string(port) + "; choose another port with --port.";
  if (ec) return "Cannot listen on 127.0.0.1:" + std::to_string(port) + ": " + ec.message() + ".";
  return acceptor;
}

// [::1]:port bound and never listened on. No SO_REUSEADDR: with it, a second socket of the same user that
// also set it could bind the address beside ours. An error is returned only when another program already
// holds the address; a machine without IPv6 loopback leaves the guard closed.
boost::system::result<tcp::socket, boost::system::error_code> hold_v6(asio::any_io_executor ex, std::uint16_t port) {
  tcp::socket guard(ex);
  tcp::endpoint ep(asio::ip::address_v6::loopback(), port);
  boost::system::error_code ec;
  guard.open(ep.protocol(), ec);
  if (!ec) guard.set_option(asio::ip::v6_only(true), ec);
  if (!ec) guard.bind(ep, ec);
  if (ec == asio::error::address_in_use) return ec;
  if (ec) {
    spdlog::debug("event=listener.no_ipv6_loopback msg=\"{}\"", ec.message());
    boost::system::error_code ignored;
    guard.close(ignored);
  }
  return guard;
}

}  // namespace

boost::system::result<Loopback, std::string> listen_loopback(asio::any_io_executor ex, std::uint16_t port) {
  // A port the system picked may be taken on [::1] by chance: pick again, a few times.
  for (int attempt = 0;; ++attempt) {
    auto acceptor = listen_v4(ex, port);
    if (!acceptor) return acceptor.error();
    const std::uint16_t bound = acceptor->local_endpoint().port();
    auto guard = hold_v6(ex, bound);
    if (guard) return Loopback{std::move(*acceptor), std::move(*guard)};
    if (port == 0 && attempt < 8) continue;
    return "Port " + std::to_string(bound) +
           " is already in use on [::1] by another program, which pages that name the engine as localhost "
           "would reach instead; stop it or choose another port with --port.";
  }
}

// Shared by the accept loop and every slot, so that connections still alive when the loop ends
// (shutdown) release their slot safely.
struct SlotTable {
  explicit SlotTable(std::size_t max) : max(max) {}

  std::size_t max;
  std::size_t live = 0;
  std::uint64_t next_key = 1;
  std::map<std::uint64_t, Slot*> waiting;  // oldest first
  std::chrono::steady_clock::time_point last_full{};
  std::size_t refused = 0;
  std::size_t reclaimed = 0;

  // Whether a new connection may be served. At the cap, the connection that has waited longest for
  // a request hands its slot over: a slowloris can't keep real clients out by holding every slot
  // with half-sent headers, and the header deadline alone would let a fast reconnecting attacker win
  // every race for a freed slot.
  bool admit() {
    if (live < max) {
      ++live;
      return true;
    }
    note_full();
    if (waiting.empty()) {
      ++refused;
      return false;
    }
    auto oldest = waiting.begin();
    Slot* victim = oldest->second;
    waiting.erase(oldest);
    victim->waiting_since_ = 0;
    victim->reclaimed_ = true;  // its slot is now the new connection's: it no longer counts
    auto close = std::move(victim->close_);
    ++reclaimed;
    if (close) close();
    return true;
  }

  // One line per burst (events less than 10 s apart), not one per connection: a flood must not
  // flood the log too.
  void note_full() {
    const auto now = std::chrono::steady_clock::now();
    if (now - last_full > std::chrono::seconds(10)) {
      spdlog::warn(
          "event=listener.at_cap max={} refused_before={} reclaimed_before={} note=\"connection cap reached: new "
          "connections take the slot of the one waiting longest for a request, else are closed\"",
          max, refused, reclaimed);
    }
    last_full = now;
  }
};

Slot::Slot(std::shared_ptr<SlotTable> table) : table_(std::move(table)) {}

Slot::Slot(Slot&& other) noexcept
    : table_(std::move(other.table_)),
      waiting_since_(other.waiting_since_),
      close_(std::move(other.close_)),
      reclaimed_(other.reclaimed_) {
  other.waiting_since_ = 0;
  if (waiting_since_ != 0) table_->waiting[waiting_since_] = this;
}

Slot::~Slot() {
  if (!table_) return;
  busy();
  if (!reclaimed_) --table_->live;
}

void Slot::waiting(std::function<void()> close) {
  if (!table_ || reclaimed_) return;
  busy();
  close_ = std::move(close);
  waiting_since_ = table_->next_key++;
  table_->waiting.emplace(waiting_since_, this);
}

void Slot::busy() {
  if (!table_ || waiting_since_ == 0) return;
  table_->waiting.erase(waiting_since_);
  waiting_since_ = 0;
  close_ = nullptr;
}

namespace {

// The cap never exceeds what the process may open, less a reserve for agents' pipes, files and
// model-server connections: past that, accept() fails and no one is served, not even a real client.
std::size_t fitting_cap(std::size_t wanted) {
  rlimit rl{};
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return wanted;
  constexpr rlim_t kReserve = 128;
  const rlim_t room = rl.rlim_cur > 2 * kReserve ? rl.rlim_cur - kReserve : rl.rlim_cur / 2;
  if (room >= wanted) return wanted;
  spdlog::info("event=listener.cap_lowered wanted={} cap={} note=\"the open-files limit is {}\"", wanted, room,
               rl.rlim_cur);
  return static_cast<std::size_t>(room);
}

}  // namespace

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, std::size_t max_connections,
                                  std::function<void(tcp::socket, Slot)> on_socket) {
  auto table = std::make_shared<SlotTable>(fitting_cap(max_connections));
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of file descriptors and the like: wait a little instead of spinning.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    if (!table->admit()) {
      // Every slot is busy with a request: closed before reading a byte, so it costs nothing.
      boost::system::error_code ignored;
      socket.close(ignored);
      continue;
    }
    // Small answers go out at once. With Nagle's algorithm, the second small write of a kept-alive
    // answer (a streamed MCP answer's last chunk) waited for the client's delayed ACK: 40 ms per
    // tools/call on a reused connection (bench scenario 4). Event streams turn it back on
    // (http/server.cpp write_streamed).
    boost::system::error_code ignored;
    socket.set_option(asio::ip::tcp::no_delay(true), ignored);
    count_what_remains(socket);  // the server's reads of a request's head are drained (drained_read.hpp)
    on_socket(std::move(socket), Slot(table));
    // The connection's request first, then the next accept: it tries the listener before it waits, and
    // finds nothing when connections come one at a time. That try, a system call (and on this machine's
    // guest an emptied TLB), came between a request's read and its handling, on the way to an approve's
    // model request (bench scenario 5). With connections queued, the next is taken a handler later.
    co_await asio::post(acceptor.get_executor(), asio::use_awaitable);
  }
}

}  // namespace leuria::transport
