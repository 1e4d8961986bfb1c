// Bytes: a child process with pipes on stdin, stdout and stderr, in its own process group.
// Spawned with a fixed argument list (never a shell), in a given folder, with a given environment;
// every descriptor of ours is close-on-exec so the child inherits only its three pipes.
// Exit is observed through a pidfd (or, where there is none, a thread's waitid; see exit_watch.hpp),
// so there are no zombies and no SIGCHLD handler.
// When the child exits, nothing it started outlives it: its process group is killed, then any
// process carrying its tag (kChildTagVariable, inherited through fork and setsid, so a daemon that
// left the group still has it) and anyone still holding its output pipes; our read ends close
// after a short drain even if some holder escaped both nets, so a descriptor never stays open.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leuria::transport {

struct SpawnSpec {
  std::string program;  // a path, or a name looked up in PATH
  std::vector<std::string> args;
  std::vector<std::string> env;  // "NAME=value", the whole environment
  std::string cwd;
};

// The longest line read from a child; a longer one ends the child (a peer that never sends a
// newline must not grow our memory).
inline constexpr std::size_t kMaxLineBytes = 32 * 1024 * 1024;
// Bytes queued for the child's stdin before writes are refused.
inline constexpr std::size_t kMaxPendingStdin = 64 * 1024 * 1024;
// Set in every child's environment to a value unique to that child; see kill_leftovers.
inline constexpr const char* kChildTagVariable = "ENGINE_CHILD_TAG";
// After the child exits, how long what it wrote may still be read before our ends of its pipes close.
inline constexpr std::chrono::milliseconds kDrainAfterExit{1000};
// A child's output ends as it exits, often a moment before its exit is seen: only one still running
// this long after is reported (on_pipe_closed).
inline constexpr std::chrono::milliseconds kExitAfterPipeClosed{1000};

class ChildProcess : public std::enable_shared_from_this<ChildProcess> {
 public:
  struct Handlers {
    // A line without its "\n" (or "\r\n"), seen only during the call: copy what must be kept.
    std::function<void(std::string_view line)> on_stdout_line;
    std::function<void(std::string_view line)> on_stderr_line;
    // After the lines one read of stdout gave were handed over (when it gave any): what they carried
    // can go on as one piece (an agent's chunks reach the page in one write).
    std::function<void()> after_stdout_lines;
    std::function<void(int exit_code)> on_exit;  // 128+signal when killed by a signal
    // The child broke a limit (a line longer than kMaxLineBytes); called once, just before it is killed.
    std::function<void(std::string what)> on_fault;
    // The child closed its end of a pipe ("output": its stdout; "input": its stdin, seen when a write
    // fails) and was still running kExitAfterPipeClosed later. Nothing more can pass that way, so an
    // owner waiting on it would wait forever. Called at most once; never after on_exit.
    std::function<void(std::string which)> on_pipe_closed;
    // Awaited before each read of stdout: the owner's backpressure. While it waits the child's
    // writes fill the pipe and then block.
    std::function<boost::asio::awaitable<void>()> before_stdout_read;
    // Asked first, when set: before_stdout_read is awaited only if this says so (no coroutine frame
    // per read while the output flows).
    std::function<bool()> stdout_must_wait;
  };

  // The error is a plain sentence ("'gemini' was not found on PATH").
  static boost::system::result<std::shared_ptr<ChildProcess>, std::string> spawn(boost::asio::any_io_executor ex,
                                                                                 const SpawnSpec& spec,
                                                                                 Handlers handlers);
  ~ChildProcess();

  // Queues a line (a newline is added). False when stdin is closed or the queue is full.
  bool write_line(std::string line);
  void close_stdin();
  // Close stdin, SIGTERM the group, SIGKILL the group after `grace` if it is still there.
  void terminate(std::chrono::milliseconds grace);
  void kill_group();

  int pid() const { return pid_; }
  bool exited() const { return exit_code_.has_value(); }
  // The signal that ended the child, 0 when it exited by itself (or still runs).
  int term_signal() const { return term_signal_; }

 private:
  ChildProcess(boost::asio::any_io_executor ex, int pid, int exit_fd, int in, int out, int err, Handlers h,
               std::string tag);
  void start();
  void kill_leftovers();
  void close_output();
  void pipe_closed(const char* which);
  boost::asio::awaitable<void> read_lines(boost::asio::posix::stream_descriptor& fd, bool is_stdout);
  boost::asio::awaitable<void> write_loop();
  boost::asio::awaitable<void> wait_exit();

  boost::asio::any_io_executor ex_;
  int pid_;
  boost::asio::posix::stream_descriptor exit_fd_, in_, out_, err_;
  Handlers handlers_;
  std::deque<std::string> pending_;
  std::size_t pending_bytes_ = 0;
  bool writing_ = false;
  bool stdin_closed_ = false;
  std::optional<int> exit_code_;
  int term_signal_ = 0;
  std::string tag_;  // "ENGINE_CHILD_TAG=<value>", as it appears in the child's environment
  boost::asio::steady_timer kill_timer_;
  boost::asio::steady_timer drain_timer_;
  boost::asio::steady_timer pipe_timer_;  // from a closed pipe to on_pipe_closed
  bool pipe_watched_ = false;             // pipe_timer_ armed (or fired): one report per child
};

// PATH lookup like execvp's; nullopt when not found or not executable. `path`: the PATH to search (the
// child's own), else the engine's. The answer is absolute (a relative one, "./x" or from an empty or
// relative PATH entry, is made so against our working folder): the child starts in another folder,
// where the same relative path would name something else or nothing.
std::optional<std::string> find_in_path(const std::string& name,
                                        std::optional<std::string_view> path = std::nullopt);

// Whether this process has a child process, running or exited and not yet reaped. Reaps nothing
// (waitid with WNOWAIT), so each child's own watch still sees its exit.
bool has_child_processes();

// SIGKILLs every process of ours (other than this one) whose environment holds `tag_entry`
// ("NAME=value") or that holds one of `pipe_inodes` open. Returns how many it signalled.
// Reads /proc; a few milliseconds on a desktop, done only when a child has exited.
int kill_processes_holding(const std::string& tag_entry, const std::vector<unsigned long>& pipe_inodes);

}  // namespace leuria::transport
