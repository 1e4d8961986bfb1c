#include "transport/exit_watch.hpp"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <spdlog/spdlog.h>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <new>

namespace leuria::transport {

namespace {

std::string cannot_watch(const char* why) { return std::string("Cannot watch the agent process: ") + why; }

// The thread's whole state, its own, so it may outlive the owner: if the owner reaped the child first
// (its destructor kills and reaps), waitid fails with ECHILD and the thread still closes its end,
// which nobody reads any more.
struct Watched {
  pid_t pid;
  int write_end;
};

void* wait_then_close(void* arg) {
  const Watched w = *static_cast<Watched*>(arg);
  delete static_cast<Watched*>(arg);
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(w.pid), &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
  }
  ::close(w.write_end);  // the read end sees the end of the pipe: readable
  return nullptr;
}

boost::system::result<ExitWatch, std::string> watch_with_thread(pid_t pid) {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return cannot_watch(std::strerror(errno));
  auto* watched = new (std::nothrow) Watched{pid, fds[1]};
  if (!watched) {
    ::close(fds[0]), ::close(fds[1]);
    return cannot_watch("out of memory");
  }
  // A small stack (it only waits), and every signal blocked, so that the engine's SIGINT and SIGTERM
  // go to a thread that handles them; the mask is inherited, so it is set around the creation.
  pthread_attr_t attr;
  ::pthread_attr_init(&attr);
  ::pthread_attr_setstacksize(&attr, 64 * 1024);
  ::pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  sigset_t all, before;
  ::sigfillset(&all);
  ::pthread_sigmask(SIG_SETMASK, &all, &before);
  pthread_t thread;
  const int rc = ::pthread_create(&thread, &attr, wait_then_close, watched);
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
  ::pthread_attr_destroy(&attr);
  if (rc != 0) {
    delete watched;
    ::close(fds[0]), ::close(fds[1]);
    return cannot_watch(std::strerror(rc));
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
    const int why = errno;
    // Only a refusal means "not here" (no such call: Linux before 5.3, valgrind; a sandbox's seccomp
    // profile: EPERM or EACCES). Out of descriptors or memory, the pipe's way would fail as well.
    if (why != ENOSYS && why != EPERM && why != EACCES)
      return cannot_watch(std::strerror(why));
    // Said once: the fallback costs a thread and two descriptors per running agent, which is worth
    // knowing, not worth repeating.
    static std::atomic<bool> said{false};
    if (!said.exchange(true))
      spdlog::info("event=child.exit_watch_thread reason=\"{}\" note=\"pidfd_open is not available here: each "
                   "agent's exit is watched by a thread of its own\"",
                   std::strerror(why));
  }
  return watch_with_thread(pid);
}

}  // namespace leuria::transport
