// Bytes: the loopback TCP listener. Binds 127.0.0.1 only, and hands each accepted socket on.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>
#include <cstdint>
#include <functional>
#include <string>

namespace leuria::transport {

// Binds 127.0.0.1:port (0 picks a free port). The error is a plain sentence ("Port 19570 is
// already in use …").
boost::system::result<boost::asio::ip::tcp::acceptor, std::string> listen_loopback(
    boost::asio::any_io_executor ex, std::uint16_t port);

// Accepts until the acceptor is closed; each socket is passed to on_socket.
boost::asio::awaitable<void> accept_loop(boost::asio::ip::tcp::acceptor& acceptor,
                                         std::function<void(boost::asio::ip::tcp::socket)> on_socket);

}  // namespace leuria::transport
