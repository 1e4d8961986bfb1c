// One engine per LEURIA_HOME: two would pair, write grants and run sessions from the same files
// behind each other's back. The engine holds an exclusive flock on LEURIA_HOME/engine.lock for its
// whole life; the kernel drops it with the process, however it ends, so a lock is never stale.
#pragma once
#include <boost/system/result.hpp>
#include <filesystem>
#include <string>

namespace leuria::store {

class EngineLock {
 public:
  // The lock, or one sentence for the visitor: another engine holds it, or the file can't be used.
  static boost::system::result<EngineLock, std::string> take(const std::filesystem::path& home);

  EngineLock(EngineLock&& other) noexcept;
  EngineLock& operator=(EngineLock&& other) noexcept;
  EngineLock(const EngineLock&) = delete;
  EngineLock& operator=(const EngineLock&) = delete;
  ~EngineLock();

 private:
  explicit EngineLock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace leuria::store
