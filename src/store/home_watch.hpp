// Watches LEURIA_HOME (inotify) for changes to the visitor's files (grants.json, config.json,
// providers.json), so `leuria sites revoke`, `leuria embed off` or an edit by hand in another
// process take effect in the running engine at once.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <filesystem>
#include <functional>
#include <string_view>

namespace leuria::store {

class HomeWatch {
 public:
  // changed(name) runs on ex's thread after a file of the home folder was replaced (renamed into
  // place), closed after writing, or removed; never while a writer still has it open. Each name
  // is reported once per batch of events.
  HomeWatch(boost::asio::any_io_executor ex, const std::filesystem::path& home,
            std::function<void(std::string_view name)> changed);
  ~HomeWatch();
  void start();

 private:
  void read_some();

  boost::asio::posix::stream_descriptor fd_;
  std::function<void(std::string_view)> changed_;
  alignas(8) char buf_[4096];
};

}  // namespace leuria::store
