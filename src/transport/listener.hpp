// Bytes: the loopback TCP listener. Listens on 127.0.0.1 only (and holds [::1] without listening), and
// hands each accepted socket on with a slot of the connection cap.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace leuria::transport {

// What the engine holds on the loopback: a listener on 127.0.0.1, and [::1] on the same port bound but
// never listening. Pages may name the engine as localhost, which a browser may try as [::1] first; held
// there, that address refuses every connection (the browser falls back to 127.0.0.1) and no other program
// can take it to pose as the engine. `v6_guard` stays closed where the machine has no IPv6 loopback:
// there nobody can take it either.
struct Loopback {
  boost::asio::ip::tcp::acceptor acceptor;
  boost::asio::ip::tcp::socket v6_guard;
};

// Binds 127.0.0.1:port and holds [::1]:port (0 picks a port free on both). The error is a plain
// sentence ("Port 19570 is already in use …").
boost::system::result<Loopback, std::string> listen_loopback(boost::asio::any_io_executor ex, std::uint16_t port);

struct SlotTable;

// One connection's place under the cap, held for as long as the connection lives. Everything runs
// on the one io thread, so there are no locks.
class Slot {
 public:
  Slot() = default;  // not counted (tests, or no cap)
  explicit Slot(std::shared_ptr<SlotTable> table);
  Slot(Slot&& other) noexcept;
  Slot& operator=(Slot&&) = delete;
  Slot(const Slot&) = delete;
  ~Slot();

  // The connection is waiting on its peer (idle keep-alive, or a head or body still arriving): what a
  // slowloris or a slow body holds. At the cap, the connection that has waited longest is closed with
  // `close` so that a new one can be served.
  void waiting(std::function<void()> close);
  // A request is being handled or answered: the connection keeps its slot.
  void busy();
  // It was closed to make room: stop at once.
  bool reclaimed() const { return reclaimed_; }

 private:
  friend struct SlotTable;
  std::shared_ptr<SlotTable> table_;
  std::uint64_t waiting_since_ = 0;  // its key among the waiting connections; 0 when busy
  std::function<void()> close_;
  bool reclaimed_ = false;
};

// Accepts until the acceptor is closed; each socket is passed to on_socket with its slot. At most
// `max_connections` live at once: beyond that, a new connection takes the slot of the one that has
// waited longest for a request, and when every connection is busy with a request it is closed at
// once. One log line per burst says so.
boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor, std::size_t max_connections,
                                         std::function<void(boost::asio::ip::tcp::socket, Slot)> on_socket);

}  // namespace leuria::transport
