#include "app/opener.hpp"

#include <spawn.h>
#include <sys/wait.h>

#include <spdlog/spdlog.h>

extern char** environ;

namespace leuria::app {

void open_in_browser(const std::string& url) {
  // A shell that backgrounds xdg-open and exits at once: we reap it here, and the browser
  // outlives nobody's wait.
  const char* argv[] = {"sh", "-c", "xdg-open \"$1\" >/dev/null 2>&1 &", "sh", url.c_str(), nullptr};
  pid_t pid = 0;
  if (posix_spawnp(&pid, "sh", nullptr, nullptr, const_cast<char**>(argv), environ) != 0) {
    spdlog::warn("event=browser.open_failed url={}", url);
    return;
  }
  int status = 0;
  waitpid(pid, &status, 0);
}

}  // namespace leuria::app
