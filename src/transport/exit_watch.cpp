#include "transport/exit_watch.hpp"

#include <fcntl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

namespace leuria::transport {

namespace {

// The thread holds only the pid and the pipe's write end, so it may outlive the owner: if the owner
// reaped the child first (its destructor kills and reaps), waitid fails with ECHILD and the thread
// still closes its end, which nobody reads any more.
void wait_then_close(pid_t pid, int write_end) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  ::close(write_end);  // the read end sees the end of the pipe: readable
}

boost::system::result<ExitWatch, std::string> watch_with_thread(pid_t pid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return std::string("Cannot watch the agent process: ") + std::strerror(errno);
  try {
    std::thread(wait_then_close, pid, fds[1]).detach();
  } catch (const std::system_error& e) {
    ::close(fds[0]), ::close(fds[1]);
    return std::string("Cannot watch the agent process: ") + e.what();
  }
  return ExitWatch{fds[0], ExitWatchKind::thread};
}

}  // namespace

boost::system::result<ExitWatch, std::string> watch_exit(pid_t pid, bool allow_pidfd) {
  if (allow_pidfd) {
    // glibc 2.36 declares pidfd_open without C linkage, so the system call itself.
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
    if (fd >= 0) {
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
      return ExitWatch{fd, ExitWatchKind::pidfd};
    }
    int why = errno;
    // Said once: the fallback costs a thread per running agent, which is worth knowing, not worth repeating.
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      spdlog::info("event=child.exit_watch_thread reason=\"{}\" note=\"pidfd_open is not available here: each "
                   "agent's exit is watched by a thread of its own\"",
                   std::strerror(why));
  }
  return watch_with_thread(pid);
}

}  // namespace leuria::transport
