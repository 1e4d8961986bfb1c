// Messages: HTTP/1.1 over one socket with Beast. Reads one request at a time (one write in flight)
// and hands a message::Request to the handler. Refused before the handler, with the connection
// closed after the answer: a head that could be framed two ways (request_head.hpp, else Beast's
// parser) with 400; a head over 16 KB or with over 100 fields with 431. A body over 16 MB is refused
// from its Content-Length alone, before any of it is read (413, through the handler's gate).
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstddef>

#include "http/message.hpp"
#include "transport/listener.hpp"

namespace leuria::http {

struct ServerLimits {
  std::size_t header_bytes = 16 * 1024;
  std::size_t header_fields = 100;
  std::size_t body_bytes = 16 * 1024 * 1024;
  // From a connection's start, or the first byte of a later request, to the request's last header:
  // a slowloris dribbling a byte a second is closed at this deadline all the same.
  std::chrono::milliseconds header_timeout{30'000};
  std::chrono::milliseconds body_timeout{60'000};   // the whole body, from its first byte
  std::chrono::milliseconds idle_timeout{60'000};   // between requests on a keep-alive connection
  std::chrono::milliseconds write_timeout{30'000};  // one response, or one chunk of a stream
  std::size_t connections = 1024;  // live at once: the cap transport::accept_loop keeps
};

// Serves one connection until it closes. `handler` may take as long as it needs (long polls).
// `slot` is the connection's place under the listener's cap, reclaimable while it waits on the peer
// (for a request, or the rest of a head or body).
boost::asio::awaitable<void> serve_connection(boost::asio::ip::tcp::socket socket, Handler handler,
                                              ServerLimits limits, transport::Slot slot);

}  // namespace leuria::http
