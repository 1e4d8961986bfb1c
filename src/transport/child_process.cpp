#include "transport/child_process.hpp"

#include "transport/exit_watch.hpp"
#include "transport/line_reads.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <filesystem>
#include <fstream>

namespace leuria::transport {

namespace asio = boost::asio;

std::optional<std::string> find_in_path(const std::string& name, std::optional<std::string_view> path) {
  auto executable = [](const std::string& p) {
    struct stat st{};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  auto absolute = [](std::string p) {
    if (p.starts_with('/')) return p;
    std::error_code ec;
    auto cwd = std::filesystem::current_path(ec);
    return ec ? p : (cwd / p).lexically_normal().string();
  };
  if (name.empty()) return std::nullopt;
  if (name.find('/') != std::string::npos) return executable(name) ? std::optional(absolute(name)) : std::nullopt;
  if (!path) {
    const char* ours = std::getenv("PATH");
    path = ours ? ours : "/usr/local/bin:/usr/bin:/bin";
  }
  std::string_view rest = *path;
  while (true) {
    auto colon = rest.find(':');
    std::string dir(rest.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (executable(candidate)) return absolute(candidate);
    if (colon == std::string_view::npos) return std::nullopt;
    rest.remove_prefix(colon + 1);
  }
}

namespace {
// The child's PATH: its environment's first PATH= (the one getenv and execvp would find), if any.
std::optional<std::string_view> path_of(const std::vector<std::string>& env) {
  for (auto& e : env)
    if (e.starts_with("PATH=")) return std::string_view(e).substr(5);
  return std::nullopt;
}
}  // namespace

boost::system::result<std::shared_ptr<ChildProcess>, std::string> ChildProcess::spawn(asio::any_io_executor ex,
                                                                                      const SpawnSpec& spec,
                                                                                      Handlers handlers) {
  // Looked up as the child would (its PATH), and made absolute: posix_spawn runs it after the chdir.
  auto program = find_in_path(spec.program, path_of(spec.env));
  if (!program) return "'" + spec.program + "' was not found on PATH";

  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return std::string("Cannot create a pipe: ") + std::strerror(errno);
  if (::pipe2(out, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]);
    return std::string("Cannot create a pipe: ") + std::strerror(errno);
  }
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(in[0]), ::close(in[1]), ::close(out[0]), ::close(out[1]);
    return std::string("Cannot create a pipe: ") + std::strerror(errno);
  }

  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  // dup2 clears close-on-exec on the targets; the originals stay close-on-exec.
  posix_spawn_file_actions_adddup2(&fa, in[0], 0);
  posix_spawn_file_actions_adddup2(&fa, out[1], 1);
  posix_spawn_file_actions_adddup2(&fa, err[1], 2);
  // Nothing else crosses: Asio's sockets aren't all close-on-exec, so close every other descriptor.
  posix_spawn_file_actions_addclosefrom_np(&fa, 3);
  if (!spec.cwd.empty()) posix_spawn_file_actions_addchdir_np(&fa, spec.cwd.c_str());

  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t all, none;
  sigfillset(&all);
  sigemptyset(&none);
  posix_spawnattr_setsigdefault(&attr, &all);  // SIGPIPE ignored here must not be ignored there
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setpgroup(&attr, 0);  // its own process group, so the whole tree can be signalled
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);

  std::vector<char*> argv;
  argv.push_back(const_cast<char*>(spec.program.c_str()));
  for (auto& a : spec.args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  // The tag that finds what the child leaves behind (see kill_leftovers): unique among the live
  // children of every running engine (our pid, then a counter).
  static std::atomic<unsigned long> counter{0};
  std::string tag = std::string(kChildTagVariable) + "=" + std::to_string(::getpid()) + "." + std::to_string(++counter);
  std::vector<char*> envp;
  for (auto& e : spec.env)
    if (!e.starts_with(std::string(kChildTagVariable) + "=")) envp.push_back(const_cast<char*>(e.c_str()));
  envp.push_back(tag.data());
  envp.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, program->c_str(), &fa, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(in[0]), ::close(out[1]), ::close(err[1]);
  if (rc != 0) {
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return "Cannot start '" + spec.program + "': " + std::strerror(rc);
  }
  auto watch = watch_exit(pid);
  if (!watch) {
    ::kill(-pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    ::close(in[1]), ::close(out[0]), ::close(err[0]);
    return watch.error();
  }
  std::shared_ptr<ChildProcess> child(
      new ChildProcess(ex, pid, watch->fd, in[1], out[0], err[0], std::move(handlers), std::move(tag)));
  child->start();
  return child;
}

ChildProcess::ChildProcess(asio::any_io_executor ex, int pid, int exit_fd, int in, int out, int err, Handlers h,
                           std::string tag)
    : ex_(ex), pid_(pid), exit_fd_(ex, exit_fd), in_(ex, in), out_(ex, out), err_(ex, err), handlers_(std::move(h)),
      tag_(std::move(tag)), kill_timer_(ex), drain_timer_(ex), pipe_timer_(ex) {}

ChildProcess::~ChildProcess() {
  if (!exit_code_) {
    ::kill(-pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
    kill_leftovers();
  }
}

namespace {

unsigned long inode_of(const asio::posix::stream_descriptor& fd) {
  struct stat st{};
  if (!fd.is_open() || ::fstat(const_cast<asio::posix::stream_descriptor&>(fd).native_handle(), &st) != 0) return 0;
  return static_cast<unsigned long>(st.st_ino);
}

// Whether a NUL-separated environment block holds `entry` as one whole item.
bool environ_holds(const std::string& block, const std::string& entry) {
  for (std::size_t at = block.find(entry); at != std::string::npos; at = block.find(entry, at + 1)) {
    const bool starts = at == 0 || block[at - 1] == '\0';
    const std::size_t end = at + entry.size();
    if (starts && (end == block.size() || block[end] == '\0')) return true;
  }
  return false;
}

bool holds_pipe(const std::string& pid, const std::vector<unsigned long>& inodes) {
  const std::string dir = "/proc/" + pid + "/fd";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool found = false;
  char target[64];
  while (auto* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string link = dir + "/" + e->d_name;
    const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n <= 0) continue;
    std::string_view t(target, static_cast<std::size_t>(n));
    if (!t.starts_with("pipe:[")) continue;
    unsigned long ino = 0;
    std::from_chars(t.data() + 6, t.data() + t.size(), ino);
    for (auto want : inodes) found = found || (want != 0 && ino == want);
    if (found) break;
  }
  ::closedir(d);
  return found;
}

}  // namespace

bool has_child_processes() {
  siginfo_t info{};
  // ECHILD: none at all. Otherwise a child exists, whether or not one has exited (si_pid says which).
  return ::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT) == 0;
}

int kill_processes_holding(const std::string& tag_entry, const std::vector<unsigned long>& pipe_inodes) {
  int signalled = 0;
  const std::string self = std::to_string(::getpid());
  DIR* proc = ::opendir("/proc");
  if (!proc) return 0;
  while (auto* e = ::readdir(proc)) {
    std::string pid = e->d_name;
    if (pid.empty() || pid.find_first_not_of("0123456789") != std::string::npos || pid == self) continue;
    bool ours = false;
    if (!tag_entry.empty()) {
      // Only our own processes' environments are readable; others fail to open and are skipped.
      std::ifstream f("/proc/" + pid + "/environ", std::ios::binary);
      std::string block((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
      ours = environ_holds(block, tag_entry);
    }
    if (!ours && !pipe_inodes.empty()) ours = holds_pipe(pid, pipe_inodes);
    int n = 0;
    std::from_chars(pid.data(), pid.data() + pid.size(), n);
    if (ours && n > 1 && ::kill(n, SIGKILL) == 0) ++signalled;
  }
  ::closedir(proc);
  return signalled;
}

// A child that double-forked and called setsid left its process group, so the group kill missed
// it; it still carries the tag. A fork racing the scan can appear after it, so scan again until a
// pass finds nobody (bounded: a fork bomb must not hold the io thread).
void ChildProcess::kill_leftovers() {
  for (int pass = 0; pass < 4 && kill_processes_holding(tag_, {}) > 0; ++pass) {
  }
}

// Our read ends of the child's output: closed once what it wrote had time to arrive. Whoever still
// holds the write ends outlived the child (it cleared the tag from its environment): it is killed,
// and our ends close anyway, so no pipe descriptor of ours outlives the child by more than the drain.
void ChildProcess::close_output() {
  std::vector<unsigned long> inodes{inode_of(out_), inode_of(err_)};
  std::erase(inodes, 0UL);
  if (!inodes.empty()) kill_processes_holding({}, inodes);
  boost::system::error_code ignored;
  out_.close(ignored);
  err_.close(ignored);
}

void ChildProcess::start() {
  auto self = shared_from_this();
  asio::co_spawn(ex_, [self]() { return self->read_lines(self->out_, true); }, asio::detached);
  asio::co_spawn(ex_, [self]() { return self->read_lines(self->err_, false); }, asio::detached);
  asio::co_spawn(ex_, [self]() { return self->wait_exit(); }, asio::detached);
}

asio::awaitable<void> ChildProcess::read_lines(asio::posix::stream_descriptor& fd, bool is_stdout) {
  auto self = shared_from_this();
  // Only stdout has the owner's backpressure and its after-lines call. (Pointers picked: GCC 12
  // mishandles class-type ?: operands inside coroutines.)
  const LineReader::OnLine* on_line = is_stdout ? &handlers_.on_stdout_line : &handlers_.on_stderr_line;
  const std::function<bool()>* must_wait =
      is_stdout && handlers_.before_stdout_read ? &handlers_.stdout_must_wait : nullptr;
  LineReader lines(fd, *on_line, is_stdout ? &handlers_.after_stdout_lines : nullptr, must_wait, kMaxLineBytes);
  // The reads run as one operation (transport/line_reads.hpp), resuming this frame only to wait for
  // the owner's room or when they stop.
  lines.next = lines.must_wait() ? LinesNext::wait_for_room : LinesNext::read;
  for (;;) {
    if (lines.next == LinesNext::wait_for_room) co_await handlers_.before_stdout_read();
    co_await read_lines_until_stop(lines);
    if (lines.next != LinesNext::wait_for_room) break;
  }
  // As the reads' co_await had it: what a handler threw leaves this coroutine.
  if (lines.next == LinesNext::threw) std::rethrow_exception(lines.thrown);
  if (lines.next == LinesNext::too_long) {
    // A line that never ends: the peer is broken. Say why before the exit is reported.
    if (handlers_.on_fault && !exit_code_)
      handlers_.on_fault("more than " + std::to_string(kMaxLineBytes >> 20) + " MB without a line break on its " +
                         (is_stdout ? "output" : "error output"));
    kill_group();
  }
  lines.take_rest();
  boost::system::error_code ignored;
  fd.close(ignored);
  if (is_stdout && lines.next == LinesNext::ended) pipe_closed("output");
}

// A pipe the child closed: reported only if the child is still there a moment later (its exit, the
// usual reason, is reported by wait_exit instead).
void ChildProcess::pipe_closed(const char* which) {
  if (exit_code_ || pipe_watched_ || !handlers_.on_pipe_closed) return;
  pipe_watched_ = true;
  pipe_timer_.expires_after(kExitAfterPipeClosed);
  pipe_timer_.async_wait([self = shared_from_this(), which = std::string(which)](boost::system::error_code ec) {
    if (!ec && !self->exit_code_) self->handlers_.on_pipe_closed(which);
  });
}

asio::awaitable<void> ChildProcess::wait_exit() {
  auto self = shared_from_this();
  co_await exit_fd_.async_wait(asio::posix::stream_descriptor::wait_read, asio::as_tuple(asio::use_awaitable));
  // The leader is gone (a zombie until reaped, so its pid can't be reused yet): anything it left
  // in its group goes with it, then we reap.
  ::kill(-pid_, SIGKILL);
  int status = 0;
  ::waitpid(pid_, &status, 0);
  term_signal_ = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + term_signal_;
  kill_timer_.cancel();
  pipe_timer_.cancel();  // the exit is the news
  boost::system::error_code ignored;
  exit_fd_.close(ignored);
  close_stdin();
  kill_leftovers();
  drain_timer_.expires_after(kDrainAfterExit);
  drain_timer_.async_wait([self](boost::system::error_code) { self->close_output(); });
  if (handlers_.on_exit) handlers_.on_exit(*exit_code_);
}

bool ChildProcess::write_line(std::string line) {
  if (stdin_closed_ || pending_bytes_ + line.size() + 1 > kMaxPendingStdin) return false;
  line.push_back('\n');
  pending_bytes_ += line.size();
  pending_.push_back(std::move(line));
  if (!writing_) {
    writing_ = true;
    auto self = shared_from_this();
    asio::co_spawn(ex_, [self]() { return self->write_loop(); }, asio::detached);
  }
  return true;
}

asio::awaitable<void> ChildProcess::write_loop() {
  auto self = shared_from_this();
  while (!pending_.empty() && in_.is_open()) {
    std::string data = std::move(pending_.front());
    pending_.pop_front();
    pending_bytes_ -= data.size();
    auto [ec, n] = co_await asio::async_write(in_, asio::buffer(data), asio::as_tuple(asio::use_awaitable));
    if (ec) {
      // Not closed by us (close_stdin sets stdin_closed_ first): the child closed its stdin.
      if (!stdin_closed_) pipe_closed("input");
      pending_.clear();
      pending_bytes_ = 0;
      stdin_closed_ = true;
      break;
    }
  }
  writing_ = false;
  if (stdin_closed_ && in_.is_open()) {
    boost::system::error_code ignored;
    in_.close(ignored);
  }
}

void ChildProcess::close_stdin() {
  stdin_closed_ = true;
  if (!writing_ && in_.is_open()) {
    boost::system::error_code ignored;
    in_.close(ignored);
  }
}

void ChildProcess::terminate(std::chrono::milliseconds grace) {
  close_stdin();
  if (exit_code_) return;
  ::kill(-pid_, SIGTERM);
  kill_timer_.expires_after(grace);
  kill_timer_.async_wait([self = shared_from_this()](boost::system::error_code ec) {
    if (!ec && !self->exit_code_) self->kill_group();
  });
}

void ChildProcess::kill_group() {
  if (!exit_code_) ::kill(-pid_, SIGKILL);
}

}  // namespace leuria::transport
