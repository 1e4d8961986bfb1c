// Watches LEURIA_HOME for changes to grants.json (inotify), so `leuria sites revoke` in another
// process takes effect in the running engine at once.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <filesystem>
#include <functional>

namespace leuria::store {

class GrantsWatch {
 public:
  // changed runs on ex's thread after grants.json was replaced (renamed into place), closed after
  // writing, or removed; never while a writer still has it open.
  GrantsWatch(boost::asio::any_io_executor ex, const std::filesystem::path& home, std::function<void()> changed);
  ~GrantsWatch();
  void start();

 private:
  void read_some();

  boost::asio::posix::stream_descriptor fd_;
  std::function<void()> changed_;
  alignas(8) char buf_[4096];
};

}  // namespace leuria::store
