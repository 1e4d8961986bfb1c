#pragma once
// A Beast TCP stream whose reads are drained reads (drained_read.hpp): the next layer of the engine's
// WebSockets. Beast's WebSocket reads into its own buffer, of its own types, through its next layer's
// async_read_some; this layer turns that read into one drained read of the buffer's first piece, so
// that after a page's message, which the kernel said was all there was, the next read waits for the
// socket's next readiness instead of trying the socket first and finding it empty (one `recvmsg` of
// a tool call's seven, bench scenario 4).
//
// A read of the first piece alone is a read_some's right (it may read fewer bytes than there is room
// for). Beast reads into its own 1,536-byte buffer, whose space is in two pieces only while a frame's
// partial head lies at its end (and then the first has room), or straight into the caller's buffer
// for a large frame's payload: the engine's is a flat buffer, one piece.
// The read goes to the socket itself, past the Beast stream's deadline and rate limit: the engine's
// WebSockets use neither (their idle deadline is their own, http/websocket.cpp). Writes, closing
// and teardown are the Beast stream's.
#include <boost/asio/buffer.hpp>
#include <boost/beast/core/stream_traits.hpp>
#include <boost/beast/core/tcp_stream.hpp>
#include <boost/beast/websocket/teardown.hpp>

#include <utility>

#include "transport/drained_read.hpp"

namespace leuria::transport {

class DrainedTcpStream {
 public:
  using next_layer_type = boost::beast::tcp_stream;
  using executor_type = next_layer_type::executor_type;

  explicit DrainedTcpStream(next_layer_type&& stream) : stream_(std::move(stream)) {}

  executor_type get_executor() noexcept { return stream_.get_executor(); }
  next_layer_type& next_layer() noexcept { return stream_; }
  const next_layer_type& next_layer() const noexcept { return stream_; }

  template <class MutableBuffers, class ReadHandler>
  auto async_read_some(const MutableBuffers& buffers, ReadHandler&& handler) {
    return async_read_drained(stream_.socket(), first_piece(buffers), std::forward<ReadHandler>(handler));
  }
  template <class ConstBuffers, class WriteHandler>
  auto async_write_some(const ConstBuffers& buffers, WriteHandler&& handler) {
    return stream_.async_write_some(buffers, std::forward<WriteHandler>(handler));
  }
  // The blocking forms, for the stream concepts Beast checks (the engine does not use them).
  template <class MutableBuffers>
  std::size_t read_some(const MutableBuffers& buffers, boost::system::error_code& ec) {
    return stream_.read_some(buffers, ec);
  }
  template <class MutableBuffers>
  std::size_t read_some(const MutableBuffers& buffers) {
    return stream_.read_some(buffers);
  }
  template <class ConstBuffers>
  std::size_t write_some(const ConstBuffers& buffers, boost::system::error_code& ec) {
    return stream_.write_some(buffers, ec);
  }
  template <class ConstBuffers>
  std::size_t write_some(const ConstBuffers& buffers) {
    return stream_.write_some(buffers);
  }

 private:
  // The first piece with room, or an empty buffer when none has (a read of nothing, which Asio
  // completes at once, as it does for the whole sequence).
  template <class MutableBuffers>
  static boost::asio::mutable_buffer first_piece(const MutableBuffers& buffers) {
    for (auto it = boost::asio::buffer_sequence_begin(buffers); it != boost::asio::buffer_sequence_end(buffers); ++it) {
      const boost::asio::mutable_buffer piece(*it);
      if (piece.size() != 0) return piece;
    }
    return {};
  }

  next_layer_type stream_;
};

// A WebSocket's teardown of its next layer (found by Beast through argument-dependent lookup): the
// Beast stream's own.
inline void teardown(boost::beast::role_type role, DrainedTcpStream& stream, boost::system::error_code& ec) {
  using boost::beast::websocket::teardown;
  teardown(role, stream.next_layer(), ec);
}
template <class TeardownHandler>
void async_teardown(boost::beast::role_type role, DrainedTcpStream& stream, TeardownHandler&& handler) {
  using boost::beast::websocket::async_teardown;
  async_teardown(role, stream.next_layer(), std::forward<TeardownHandler>(handler));
}

}  // namespace leuria::transport
