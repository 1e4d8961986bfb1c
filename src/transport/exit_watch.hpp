// Bytes: a descriptor that becomes readable when a child process exits, for Asio to wait on.
// A pidfd where the kernel gives one; where it does not (pidfd_open is Linux 5.3+, and some sandboxes
// and tools refuse it: an older container seccomp profile, valgrind 3.19), the read end of a pipe that a
// thread of its own closes once waitid says the child has exited. Either way the child is left
// unreaped (waitid's WNOWAIT), so its pid is not reused before the owner reaps it with waitpid.
#pragma once
#include <sys/types.h>

#include <boost/system/result.hpp>
#include <string>

namespace leuria::transport {

enum class ExitWatchKind { pidfd, thread };

struct ExitWatch {
  int fd = -1;  // close-on-exec; the caller owns it
  ExitWatchKind kind = ExitWatchKind::pidfd;
};

// The error is a plain sentence. `allow_pidfd` false takes the thread's way (for tests).
boost::system::result<ExitWatch, std::string> watch_exit(pid_t pid, bool allow_pidfd = true);

}  // namespace leuria::transport
