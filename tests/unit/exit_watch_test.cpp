// A child's exit watched without pidfd_open: the thread's way directly, and a whole ChildProcess in a
// process where a seccomp filter makes pidfd_open fail, as an older container profile does.
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

// From here on pidfd_open fails with ENOSYS in this process (and its children); everything else is allowed.
bool refuse_pidfd_open() {
  sock_filter filter[] = {
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
      BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)),
      BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_pidfd_open, 0, 1),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
      BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
  };
  sock_fprog prog{static_cast<unsigned short>(sizeof filter / sizeof filter[0]), filter};
  return ::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0 &&
         ::syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0;
}

}  // namespace

TEST(ExitWatch, TheThreadsWaySaysWhenTheChildExitsAndLeavesItToBeReaped) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::usleep(200 * 1000);
    ::_exit(3);
  }
  auto watch = transport::watch_exit(pid, /*allow_pidfd=*/false);
  ASSERT_TRUE(watch) << watch.error();
  EXPECT_EQ(watch->kind, transport::ExitWatchKind::thread);
  EXPECT_FALSE(readable_within(watch->fd, 0)) << "readable while the child still runs";
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
// 10: no filter; 11: the filter did not take; 12, 13: a spawn failed; 14–16: an outcome was wrong.
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
  // "threadsafe": a fresh run of this binary, not a fork of one whose other threads may hold a lock.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(run_children_without_pidfd_open(), testing::ExitedWithCode(0), "");
}
