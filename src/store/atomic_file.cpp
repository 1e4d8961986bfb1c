#include "store/atomic_file.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

namespace leuria::store {
namespace {

[[noreturn]] void fail(const std::string& what, const std::filesystem::path& p) {
  throw std::runtime_error(what + " " + p.string() + ": " + std::strerror(errno));
}

}  // namespace

std::optional<std::string> read_file(const std::filesystem::path& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return std::nullopt;
    fail("Cannot read", path);
  }
  std::string out;
  char buf[16384];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      ::close(fd);
      fail("Cannot read", path);
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return out;
}

std::filesystem::path temp_path(const std::filesystem::path& path) {
  auto tmp = path;
  tmp += ".tmp";
  return tmp;
}

void write_file_atomic(const std::filesystem::path& path, const std::string& content) {
  // One fixed temp name per file: writers hold <path>.lock, so no two writes share it, and a
  // temp left by a writer that was killed is truncated by the next write instead of piling up.
  const auto tmp = temp_path(path);
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) fail("Cannot write", tmp);
  // Every step is checked: the caller acknowledges the change only once this returns, so a full
  // disk or an I/O error must surface here, with the old file left as it was.
  auto give_up = [&](const char* what, const std::filesystem::path& p) {
    const int err = errno;
    ::close(fd);
    ::unlink(tmp.c_str());
    errno = err;
    fail(what, p);
  };
  if (::fchmod(fd, 0600) != 0) give_up("Cannot write", tmp);
  std::size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      give_up("Cannot write", tmp);
    }
    done += static_cast<std::size_t>(n);
  }
  if (::fsync(fd) != 0) give_up("Cannot sync", tmp);
  if (::close(fd) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    fail("Cannot write", tmp);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    errno = err;
    fail("Cannot replace", path);
  }
  // The rename is durable only once the folder is synced; until then a power cut can undo it.
  auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  const int rc = dfd < 0 ? -1 : ::fsync(dfd);
  const int err = errno;
  if (dfd >= 0) ::close(dfd);
  if (rc != 0) throw NotDurable("Cannot sync folder " + dir.string() + ": " + std::strerror(err));
}

void remove_stale_temps(const std::filesystem::path& path) {
  const auto dir = path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path();
  const std::string name = temp_path(path).filename().string();
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string entry = it->path().filename().string();
    // <name>.tmp, and <name>.tmp-<pid> from versions that named the temp after the writer.
    if (entry == name || entry.starts_with(name + "-")) {
      std::error_code ignored;
      std::filesystem::remove(it->path(), ignored);
    }
  }
}

FileLock::FileLock(const std::filesystem::path& path) {
  fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd_ < 0) fail("Cannot open", path);
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      ::close(fd_);
      fail("Cannot lock", path);
    }
  }
}

FileLock::~FileLock() {
  if (fd_ >= 0) ::close(fd_);
}

}  // namespace leuria::store
