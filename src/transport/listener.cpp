#include "transport/listener.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace leuria::transport {

namespace asio = boost::asio;
using asio::ip::tcp;

boost::system::result<tcp::acceptor, std::string> listen_loopback(asio::any_io_executor ex, std::uint16_t port) {
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

asio::awaitable<void> accept_loop(tcp::acceptor& acceptor, std::function<void(tcp::socket)> on_socket) {
  for (;;) {
    auto [ec, socket] = co_await acceptor.async_accept(asio::as_tuple(asio::use_awaitable));
    if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
    if (ec) {
      // Out of file descriptors and the like: wait a little instead of spinning.
      asio::steady_timer pause(acceptor.get_executor(), std::chrono::milliseconds(50));
      co_await pause.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    on_socket(std::move(socket));
  }
}

}  // namespace leuria::transport
