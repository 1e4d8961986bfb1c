// Messages: HTTP/1.1 over one socket with Beast. Reads one request at a time (one write in flight),
// enforces the header limit (16 KB, 431) and the body limit (16 MB, 413, refused from the
// Content-Length alone, before any of the body is read), and hands a message::Request to the handler.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>

#include "http/message.hpp"

namespace leuria::http {

struct ServerLimits {
  std::size_t header_bytes = 16 * 1024;
  std::size_t body_bytes = 16 * 1024 * 1024;
  std::chrono::seconds header_timeout{30};  // from the first byte of a request to its last header
  std::chrono::seconds body_timeout{60};
  std::chrono::seconds idle_timeout{60};  // between requests on a keep-alive connection
  std::chrono::seconds write_timeout{30};
};

// Serves one connection until it closes. `handler` may take as long as it needs (long polls).
boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket socket, Handler handler,
                                              ServerLimits limits);

}  // namespace leuria::http
