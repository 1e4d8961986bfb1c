// A child's exit watched without pidfd_open: the thread's way directly, and a whole ChildProcess in a
// process where a seccomp filter makes pidfd_open fail, as an older container profile does. And
// has_child_processes, which the engine's stop asks.
#include <gtest/gtest.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstdint>
#include <string>
#include <vector>

#include "transport/child_process.hpp"
#include "transport/exit_watch.hpp"

using namespace leuria;
namespace asio = boost::asio;

namespace {

bool readable_within(int fd, int ms) {
  pollfd p{fd, POLLIN, 0};
  return ::poll(&p, 1, ms) == 1;
}

#if defined(__x86_64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr std::uint32_t kAuditArch = AUDIT_ARCH_AARCH64;
#else
constexpr std::uint32_t kAuditArch = 0;  // the death test skips
#endif

// From here on pidfd_open fails with ENOSYS in this process (and its children); everything else is
// allowed. A call made for another architecture than the build's (x86-64's 32-bit ABI) is refused
// outright, so the filter cannot be stepped around.
bool refuse_pidfd_open() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, kAuditArch, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

// Whether a seccomp filter can be installed here (not in every sandbox): asked in a child process.
bool seccomp_available() {
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(refuse_pidfd_open() ? 0 : 1);
  int status = 0;
  return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace

TEST(ExitWatch, TheThreadsWaySaysWhenTheChildExitsAndLeavesItToBeReaped) {
  int go[2];
  ASSERT_EQ(::pipe(go), 0);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // Runs until the test closes its end of `go`: the test decides when it exits.
    char c;
    ::close(go[1]);
    (void)!::read(go[0], &c, 1);
    ::_exit(3);
  }
  ::close(go[0]);
  auto watch = transport::watch_exit(pid, /*allow_pidfd=*/false);
  ASSERT_TRUE(watch) << watch.error();
  EXPECT_EQ(watch->kind, transport::ExitWatchKind::thread);
  EXPECT_FALSE(readable_within(watch->fd, 100)) << "readable while the child still runs";
  ::close(go[1]);
  EXPECT_TRUE(readable_within(watch->fd, 10000));
  int status = 0;
  // Still ours to reap: the watch did not take its exit status.
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), pid);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 3) << status;
  ::close(watch->fd);
}

TEST(ExitWatch, AReapedChildLeavesTheThreadNothingToWaitFor) {
  // The owner may reap first (its destructor kills and reaps): the thread ends on ECHILD and closes its end.
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) ::_exit(0);
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  auto watch = transport::watch_exit(pid, false);
  ASSERT_TRUE(watch) << watch.error();
  EXPECT_TRUE(readable_within(watch->fd, 10000));
  ::close(watch->fd);
}

// Runs in a process of its own (a seccomp filter cannot be taken back) and exits 0 when all held;
// 10: no filter (seccomp_available said yes); 11: the filter did not take; 12, 13: a spawn failed; 14–16: an outcome was wrong.
[[noreturn]] void run_children_without_pidfd_open() {
  if (!refuse_pidfd_open()) ::_exit(10);
  errno = 0;
  if (::syscall(SYS_pidfd_open, ::getpid(), 0) != -1 || errno != ENOSYS) ::_exit(11);
  asio::io_context ioc;
  std::vector<std::string> lines;
  int code = -1, killed = -1;
  transport::ChildProcess::Handlers h;
  h.on_stdout_line = [&](std::string_view line) { lines.emplace_back(line); };
  h.on_exit = [&](int c) { code = c; };
  auto a = transport::ChildProcess::spawn(ioc.get_executor(), {"/bin/sh", {"-c", "echo one; echo two; exit 5"}, {}, "/"},
                                          std::move(h));
  if (!a) ::_exit(12);
  transport::ChildProcess::Handlers k;
  k.on_exit = [&](int c) { killed = c; };
  auto b = transport::ChildProcess::spawn(ioc.get_executor(), {"/bin/sleep", {"300"}, {}, "/"}, std::move(k));
  if (!b) ::_exit(13);
  (*b)->terminate(std::chrono::milliseconds(2000));
  ioc.run_for(std::chrono::seconds(20));
  if (code != 5) ::_exit(14);
  if (lines != std::vector<std::string>{"one", "two"}) ::_exit(15);
  if (killed != 128 + SIGTERM) ::_exit(16);
  ::_exit(0);
}

TEST(ExitWatchDeathTest, WithoutPidfdOpenAChildStillReportsItsLinesItsExitAndItsTermination) {
  if (kAuditArch == 0) GTEST_SKIP() << "no seccomp architecture constant for this build's architecture";
  if (!seccomp_available()) GTEST_SKIP() << "a seccomp filter cannot be installed here";
  // "threadsafe": a fresh run of this binary, not a fork of one whose other threads may hold a lock.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_children_without_pidfd_open(), testing::ExitedWithCode(0), "");
}

// The engine's stop waits for agents only while it has a child process: has_child_processes must
// see a running child and an exited, unreaped one, and reap neither. Checked in a forked helper, which
// has no children but its own (the test binary may have others).
TEST(ExitWatch, HasChildProcessesSeesRunningAndUnreapedChildrenAndReapsNone) {
  const pid_t helper = ::fork();
  ASSERT_GE(helper, 0);
  if (helper == 0) {
    if (transport::has_child_processes()) ::_exit(1);
    const pid_t child = ::fork();
    if (child < 0) ::_exit(7);
    if (child == 0) {
      ::pause();
      ::_exit(0);
    }
    if (!transport::has_child_processes()) {  // running
      ::kill(child, SIGKILL);
      ::_exit(2);
    }
    ::kill(child, SIGKILL);
    siginfo_t info{};
    if (::waitid(P_PID, child, &info, WEXITED | WNOWAIT) != 0) ::_exit(3);
    if (!transport::has_child_processes()) ::_exit(4);  // exited, not reaped
    if (::waitpid(child, nullptr, WNOHANG) != child) ::_exit(5);  // still there to reap
    if (transport::has_child_processes()) ::_exit(6);  // reaped
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(helper, &status, 0), helper);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "1: a child seen where there is none; 2: a running child missed; "
                                       "3: waitid failed; 4: an unreaped child missed; 5: it reaped the child; "
                                       "6: a reaped child still seen; 7: fork failed";
}
