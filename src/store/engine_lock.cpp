#include "store/engine_lock.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace leuria::store {

boost::system::result<EngineLock, std::string> EngineLock::take(const std::filesystem::path& home) {
  const auto path = home / "engine.lock";
  // Close-on-exec: an agent the engine started must not keep the lock after the engine is gone.
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return "Cannot open " + path.string() + ": " + std::strerror(errno);
  int rc = 0;
  while ((rc = ::flock(fd, LOCK_EX | LOCK_NB)) != 0 && errno == EINTR) {
  }
  if (rc != 0) {
    const int err = errno;
    ::close(fd);
    if (err == EWOULDBLOCK)
      return "Another Leuria engine is already running with " + home.string() +
             "; stop it first (or set LEURIA_HOME).";
    return "Cannot lock " + path.string() + ": " + std::strerror(err);
  }
  return EngineLock(fd);
}

EngineLock::EngineLock(EngineLock&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}

EngineLock& EngineLock::operator=(EngineLock&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = std::exchange(other.fd_, -1);
  }
  return *this;
}

EngineLock::~EngineLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace leuria::store
