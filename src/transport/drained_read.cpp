#include "transport/drained_read.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstring>

namespace leuria::transport {

bool count_what_remains(boost::asio::ip::tcp::socket& socket) {
#ifdef TCP_INQ
  const int on = 1;
  return ::setsockopt(socket.native_handle(), IPPROTO_TCP, TCP_INQ, &on, sizeof on) == 0;
#else
  (void)socket;
  return false;
#endif
}

#if LEURIA_DRAINED_READ_SPECIALIZED
namespace detail {

Received receive(int socket, void* data, std::size_t size, int flags, bool stream, boost::system::error_code& ec,
                 std::size_t& bytes) {
  iovec iov{data, size};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))];
  for (;;) {
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof control;
    const ssize_t n = ::recvmsg(socket, &msg, flags);
    if (n < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) return Received::again;
      ec = boost::system::error_code(errno, boost::asio::error::get_system_category());
      bytes = 0;
      return Received::done;
    }
    ec = {};
    bytes = static_cast<std::size_t>(n);
    if (n == 0 && stream) {
      ec = boost::asio::error::eof;
      return Received::done;
    }
#ifdef TCP_CM_INQ
    for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_TCP || c->cmsg_type != TCP_CM_INQ || c->cmsg_len < CMSG_LEN(sizeof(int))) continue;
      int left = 0;
      std::memcpy(&left, CMSG_DATA(c), sizeof left);
      // A FIN received counts as 1 (the kernel's tcp_inq_hint), so 0 means: nothing until the next event.
      if (left == 0) return Received::done_and_nothing_left;
    }
#endif
    return Received::done;
  }
}

}  // namespace detail
#endif

}  // namespace leuria::transport
