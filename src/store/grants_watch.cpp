#include "store/grants_watch.hpp"

#include <sys/inotify.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace leuria::store {

GrantsWatch::GrantsWatch(boost::asio::any_io_executor ex, const std::filesystem::path& home,
                         std::function<void()> changed)
    : fd_(ex), changed_(std::move(changed)) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw std::runtime_error("Cannot watch " + home.string() + ": " + std::strerror(errno));
  if (::inotify_add_watch(fd, home.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE) < 0) {
    ::close(fd);
    throw std::runtime_error("Cannot watch " + home.string() + ": " + std::strerror(errno));
  }
  fd_.assign(fd);
}

GrantsWatch::~GrantsWatch() {
  boost::system::error_code ec;
  fd_.close(ec);
}

void GrantsWatch::start() { read_some(); }

void GrantsWatch::read_some() {
  fd_.async_read_some(boost::asio::buffer(buf_), [this](boost::system::error_code ec, std::size_t n) {
    if (ec) return;  // closed at shutdown
    bool relevant = false;
    for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
      inotify_event ev;
      std::memcpy(&ev, buf_ + off, sizeof ev);
      if (ev.len > 0 && std::strcmp(buf_ + off + sizeof(inotify_event), "grants.json") == 0) relevant = true;
      off += sizeof(inotify_event) + ev.len;
    }
    if (relevant) changed_();
    read_some();
  });
}

}  // namespace leuria::store
