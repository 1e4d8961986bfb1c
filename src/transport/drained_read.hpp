#pragma once
// A socket read that, when it comes back short, lets the next read wait for the socket's next
// readiness instead of trying the socket first.
//
// Why: Asio 1.81's epoll reactor tries every read before it waits (a "speculative" read), and only a
// read of 0 bytes stops the next try. A relay that reads a message, passes it on and reads again
// therefore pays a second `recvmsg` per message that finds nothing: on a paravirtualised guest, where a
// system call is the main cost, that is a third of the engine's system calls per streamed event
// (docs/PERFORMANCE.md, scenarios 1, 4 and 7). A read that took less than it had room for emptied the
// socket's queue, and Asio registers every socket edge-triggered, so any byte that comes after it
// raises an event, which turns trying back on (nginx reads its sockets by the same rule).
//
// How: Asio asks a read operation whether the socket is "exhausted" (its `done_and_exhausted`), and
// stops trying reads on that socket until its next event when it is. The operation's base is a
// template on the buffer type; `DrainedBuffer` is ours, and its specialization below answers
// "exhausted" for a short read. Nothing else changes: the same recv, the same completion. Where the
// specialization does not apply (another Asio, another reactor), `DrainedBuffer` is an ordinary buffer
// sequence and the read is Asio's own.
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#include <cstddef>

namespace leuria::transport {

// One buffer, as a buffer sequence of one: the marker that selects the short-read rule.
struct DrainedBuffer {
  boost::asio::mutable_buffer buffer;
  const boost::asio::mutable_buffer* begin() const noexcept { return &buffer; }
  const boost::asio::mutable_buffer* end() const noexcept { return &buffer + 1; }
};

// Reads some bytes into `buffer`, as `socket.async_read_some` does.
template <class Token>
auto async_read_drained(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer, Token&& token) {
  return socket.async_read_some(DrainedBuffer{buffer}, static_cast<Token&&>(token));
}

}  // namespace leuria::transport

#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#include <boost/asio/detail/reactive_socket_recv_op.hpp>

namespace boost::asio::detail {

// Asio's reactive_socket_recv_op_base, for one buffer, with one change: a short read of a stream
// socket is `done_and_exhausted`, where Asio's says so of an empty read only.
template <>
class reactive_socket_recv_op_base<leuria::transport::DrainedBuffer> : public reactor_op {
 public:
  reactive_socket_recv_op_base(const boost::system::error_code& success_ec, socket_type socket,
                               socket_ops::state_type state, const leuria::transport::DrainedBuffer& buffers,
                               socket_base::message_flags flags, func_type complete_func)
      : reactor_op(success_ec, &reactive_socket_recv_op_base::do_perform, complete_func),
        socket_(socket),
        state_(state),
        buffer_(buffers.buffer),
        flags_(flags) {}

  static status do_perform(reactor_op* base) {
    auto* o = static_cast<reactive_socket_recv_op_base*>(base);
    const bool stream = (o->state_ & socket_ops::stream_oriented) != 0;
    if (!socket_ops::non_blocking_recv1(o->socket_, o->buffer_.data(), o->buffer_.size(), o->flags_, stream, o->ec_,
                                        o->bytes_transferred_))
      return not_done;
    return stream && o->bytes_transferred_ < o->buffer_.size() ? done_and_exhausted : done;
  }

 private:
  socket_type socket_;
  socket_ops::state_type state_;
  boost::asio::mutable_buffer buffer_;
  socket_base::message_flags flags_;
};

}  // namespace boost::asio::detail
#endif
