#include "store/home_watch.hpp"

#include <sys/inotify.h>

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <stdexcept>
#include <string>

namespace leuria::store {

HomeWatch::HomeWatch(boost::asio::any_io_executor ex, const std::filesystem::path& home,
                     std::function<void(std::string_view)> changed)
    : fd_(ex), changed_(std::move(changed)) {
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) throw std::runtime_error("Cannot watch " + home.string() + ": " + std::strerror(errno));
  if (::inotify_add_watch(fd, home.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE) < 0) {
    ::close(fd);
    throw std::runtime_error("Cannot watch " + home.string() + ": " + std::strerror(errno));
  }
  fd_.assign(fd);
}

HomeWatch::~HomeWatch() {
  boost::system::error_code ec;
  fd_.close(ec);
}

void HomeWatch::start() { read_some(); }

void HomeWatch::read_some() {
  fd_.async_read_some(boost::asio::buffer(buf_), [this](boost::system::error_code ec, std::size_t n) {
    if (ec) return;  // closed at shutdown
    std::set<std::string> names;
    for (std::size_t off = 0; off + sizeof(inotify_event) <= n;) {
      inotify_event ev;
      std::memcpy(&ev, buf_ + off, sizeof ev);
      if (ev.len > 0) names.emplace(buf_ + off + sizeof(inotify_event));  // NUL-padded
      off += sizeof(inotify_event) + ev.len;
    }
    for (const auto& name : names) changed_(name);
    read_some();
  });
}

}  // namespace leuria::store
