// Bytes: the loopback TCP listener. Binds 127.0.0.1 only, and hands each accepted socket on with
// a slot of the connection cap.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace leuria::transport {

// Binds 127.0.0.1:port (0 picks a free port). The error is a plain sentence ("Port 19570 is
// already in use …").
boost::system::result<boost::asio::ip::tcp::acceptor, std::string> listen_loopback(
    boost::asio::any_io_executor ex, std::uint16_t port);

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
