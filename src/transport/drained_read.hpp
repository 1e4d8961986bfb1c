#pragma once
// A socket read after which, when the kernel says nothing remains, the next read waits for the socket's
// next readiness instead of trying the socket first.
//
// Why: Asio 1.81's epoll reactor tries every read before it waits (a "speculative" read), and only a
// read of 0 bytes stops the next try. A relay that reads a message, passes it on and reads again
// therefore pays a second `recvmsg` per message that finds nothing: on a paravirtualised guest, where a
// system call is the main cost, that is a third of the engine's system calls per streamed event
// (docs/PERFORMANCE.md, scenarios 1, 4 and 7).
//
// How: Asio asks a read operation whether the socket is "exhausted" (its `done_and_exhausted`), and
// stops trying reads on that socket until its next event when it is. The operation's base is a
// template on the buffer type; `DrainedBuffer` is ours, and its specialization below answers
// "exhausted" when the kernel said, with the bytes it gave, that none remain: Linux's TCP_INQ option
// (set by `count_what_remains`) adds that count to each `recvmsg`, and counts a received FIN as one
// byte, so that the end is always read. Asio registers every socket edge-triggered, so any byte that
// comes after such a read raises an event, which turns trying back on. A short read alone is not
// enough: the peer's last bytes and its FIN may be in the socket before the reactor reports it, and
// the FIN's event is then already taken. Without the count (the option not set, another kind of
// socket) the read is Asio's rule: try again.
//
// The one case the count does not cover: a socket error (a reset, a retransmission or keep-alive
// timeout) that is in the socket, behind the last bytes, before the reactor reports them. The kernel
// counts a FIN but not an error, so the next read waits for its deadline and fails then, where
// Asio's would fail at once. A peer resets instead of closing when it closes with input unread, or
// with SO_LINGER at 0: an HTTP client that does so has had its answer; a model server (or a proxy)
// that refuses a request unread matters only when its answer runs to the close, since an answer with
// a length or chunks is whole before the next read. On a page's WebSocket (drained_stream.hpp) the
// engine's next write, a tool channel's 15 s ping at the latest, finds the peer gone and closes the
// socket, which ends the read (http/websocket.cpp, `fail`); a socket with nothing to write is dropped
// at its idle deadline.
//
// Where the specialization does not apply (another Asio, another reactor), `DrainedBuffer` is an
// ordinary buffer sequence and the read is Asio's own.
#include <boost/asio/ip/tcp.hpp>
#include <boost/version.hpp>

#include <cstddef>

// Whether the specialization below is in: Asio 1.81 (the one whose read operation it mirrors) on its
// epoll reactor. The source and the tests ask this one macro.
#if BOOST_VERSION == 108100 && defined(BOOST_ASIO_HAS_EPOLL) && !defined(BOOST_ASIO_HAS_IO_URING_AS_DEFAULT)
#define LEURIA_DRAINED_READ_SPECIALIZED 1
#else
#define LEURIA_DRAINED_READ_SPECIALIZED 0
#endif

namespace leuria::transport {

// One buffer, as a buffer sequence of one: the marker that selects the drained read.
struct DrainedBuffer {
  boost::asio::mutable_buffer buffer;
  const boost::asio::mutable_buffer* begin() const noexcept { return &buffer; }
  const boost::asio::mutable_buffer* end() const noexcept { return &buffer + 1; }
};

// Asks the kernel to say, with each read of `socket`, how many bytes remain (TCP_INQ): what lets a
// drained read wait. Whether it could; a socket without it reads as Asio's reads do.
bool count_what_remains(boost::asio::ip::tcp::socket& socket);

// Reads some bytes into `buffer`, as `socket.async_read_some` does.
template <class Token>
auto async_read_drained(boost::asio::ip::tcp::socket& socket, boost::asio::mutable_buffer buffer, Token&& token) {
  return socket.async_read_some(DrainedBuffer{buffer}, static_cast<Token&&>(token));
}

}  // namespace leuria::transport

#if LEURIA_DRAINED_READ_SPECIALIZED
#include <boost/asio/detail/reactive_socket_recv_op.hpp>

namespace leuria::transport::detail {
// One recvmsg into `data`, as Asio's non-blocking receive does it (EINTR retried, EAGAIN is "not
// done", 0 bytes on a stream is the end), and whether the kernel said that nothing remains after it.
enum class Received { again, done, done_and_nothing_left };
Received receive(int socket, void* data, std::size_t size, int flags, bool stream, boost::system::error_code& ec,
                 std::size_t& bytes);
}  // namespace leuria::transport::detail

namespace boost::asio::detail {

// Asio's reactive_socket_recv_op_base, for one buffer, with one change: a read after which the kernel
// says nothing remains is `done_and_exhausted`, where Asio's says so of an empty read only.
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
    using leuria::transport::detail::Received;
    auto* o = static_cast<reactive_socket_recv_op_base*>(base);
    const bool stream = (o->state_ & socket_ops::stream_oriented) != 0;
    const Received r = leuria::transport::detail::receive(o->socket_, o->buffer_.data(), o->buffer_.size(), o->flags_,
                                                           stream, o->ec_, o->bytes_transferred_);
    if (r == Received::again) return not_done;
    // As Asio's: an end or a failure (0 bytes) is exhausted too.
    if (r == Received::done_and_nothing_left || (stream && o->bytes_transferred_ == 0)) return done_and_exhausted;
    return done;
  }

 private:
  socket_type socket_;
  socket_ops::state_type state_;
  boost::asio::mutable_buffer buffer_;
  socket_base::message_flags flags_;
};

}  // namespace boost::asio::detail
#endif
