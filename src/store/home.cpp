#include "store/home.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace leuria::store {

std::filesystem::path home_dir() {
  if (const char* h = std::getenv("LEURIA_HOME"); h && *h) return h;
  const char* home = std::getenv("HOME");
  return std::filesystem::path(home && *home ? home : ".") / ".leuria";
}

boost::system::result<void, std::string> ensure_home(const std::filesystem::path& dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return "Cannot create " + dir.string() + ": " + ec.message();
  if (::chmod(dir.c_str(), 0700) != 0)
    return "Cannot set the permissions of " + dir.string() + ": " + std::strerror(errno);
  return {};
}

}  // namespace leuria::store
