#include "app/mcp_stdio.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/experimental/channel.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/read_until.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/streambuf.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <iostream>
#include <optional>

#include "app/mcp_bridge.hpp"
#include "core/page_tools.hpp"
#include "http/client.hpp"

namespace leuria::app {

namespace asio = boost::asio;

namespace {

// The agent's messages wait on the engine side by side: a page's tool call may take its 10 minutes, and
// the agent's other calls, its pings and its cancellations must not queue behind it. At most this many
// are with the engine at once, twice the calls a session lets wait on its page, so that with those all
// taken the rest (pings, cancellations, the engine's quick refusal of one call too many) still pass; and
// at most kInFlightBytes of them (one line alone may be larger). Past either, stdin is not read until one
// is done (the agent's writes wait in the pipe): the policy for an agent that outruns its page.
constexpr std::size_t kInFlight = 2 * core::kMaxPendingCalls;
constexpr std::size_t kInFlightBytes = 64 * 1024 * 1024;
// Lines for stdout waiting behind the write in progress. A forward whose line does not fit waits, and keeps
// its place among the kInFlight, so an agent that stops reading its stdout stops the bridge reading its stdin.
constexpr std::size_t kOutQueue = 16;
// Lines taken into one write while more wait, up to about this many bytes.
constexpr std::size_t kBatch = 256 * 1024;
constexpr std::size_t kCancelledKept = kInFlight;

// Lines for stdout. A line sent with an error (eof) is the end: every forward is done.
using LineChannel = asio::experimental::channel<void(boost::system::error_code, std::string)>;

class StdioBridge {
 public:
  StdioBridge(asio::io_context& ioc, std::string url, std::string token)
      : ioc_(ioc),
        ex_(ioc.get_executor()),
        in_(ioc, ::dup(STDIN_FILENO)),
        out_(ioc, ::dup(STDOUT_FILENO)),
        url_(std::move(url)),
        token_(std::move(token)),
        lines_(ex_, kOutQueue),
        slot_free_(ex_) {}

 private:
  // Every coroutine's end. An exception (out of memory, say) ends the bridge with exit 1 and a sentence: the
  // agent sees its server go, rather than a request that never gets its reply.
  auto on_exit() {
    return [this](std::exception_ptr e) {
      if (!e) return;
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::cerr << "leuria mcp-stdio: stopping (" << x.what() << ").\n";
      } catch (...) {
        std::cerr << "leuria mcp-stdio: stopping (an unknown error).\n";
      }
      exit_code_ = 1;
      ioc_.stop();
    };
  }

 public:
  void start() {
    asio::co_spawn(ex_, write_stdout(), on_exit());
    asio::co_spawn(ex_, read_stdin(), on_exit());
  }

  int exit_code() const { return exit_code_; }

 private:
  // Until stdin ends (exit 0) or brings a line longer than 64 MB (exit 1: stderr says why); then the
  // messages already read are answered before the bridge exits.
  asio::awaitable<void> read_stdin() {
    asio::streambuf buffer(64 * 1024 * 1024);
    for (;;) {
      auto [ec, n] = co_await asio::async_read_until(in_, buffer, '\n', asio::as_tuple(asio::use_awaitable));
      if (ec == asio::error::not_found) {
        std::cerr << "leuria mcp-stdio: a message longer than 64 MB came on stdin; stopping.\n";
        exit_code_ = 1;
        break;
      }
      if (ec) break;
      std::string line(asio::buffers_begin(buffer.data()), asio::buffers_begin(buffer.data()) + static_cast<long>(n));
      buffer.consume(n);
      while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
      if (line.empty()) continue;
      while (in_flight_ >= kInFlight || (in_flight_ > 0 && bytes_in_flight_ + line.size() > kInFlightBytes)) {
        slot_free_.expires_at(asio::steady_timer::time_point::max());
        co_await slot_free_.async_wait(asio::as_tuple(asio::use_awaitable));
      }
      ++in_flight_;
      bytes_in_flight_ += line.size();
      asio::co_spawn(ex_, forward(std::move(line)), on_exit());
    }
    reading_ = false;
    if (in_flight_ == 0) co_await end_output();
  }

  // One write at a time, of the lines waiting (up to kBatch). After a failed write (the agent closed its end) lines are
  // dropped, so forwards never wait on a reader that is gone.
  asio::awaitable<void> write_stdout() {
    for (;;) {
      auto [ec, line] = co_await lines_.async_receive(asio::as_tuple(asio::use_awaitable));
      if (ec) co_return;
      std::string batch = std::move(line);
      batch.push_back('\n');
      bool end = false;
      while (!end && batch.size() < kBatch && lines_.try_receive([&](boost::system::error_code more_ec, std::string more) {
        if (more_ec) {
          end = true;
          return;
        }
        batch += more;
        batch.push_back('\n');
      })) {
      }
      if (!stdout_broken_) {
        auto [wec, written] = co_await asio::async_write(out_, asio::buffer(batch), asio::as_tuple(asio::use_awaitable));
        (void)written;
        if (wec) {
          stdout_broken_ = true;
          std::cerr << "leuria mcp-stdio: could not write to stdout (" << wec.message() << "); replies are dropped.\n";
        }
      }
      if (end) co_return;
    }
  }

  // One message to the engine and what goes back for it (app/mcp_bridge.hpp: each request gets exactly one
  // reply, the engine's or an error saying why there was none; only whole messages go on).
  asio::awaitable<void> forward(std::string line) {
    if (auto id = cancelled_request_id(line)) {  // before the engine ends the call, so its reply finds it
      if (cancelled_.size() >= kCancelledKept) cancelled_.pop_front();
      cancelled_.push_back(std::move(*id));
    }
    http::ClientRequest req;
    req.method = "POST";
    req.url = url_;
    req.headers = {{"Content-Type", "application/json"},
                   {"Accept", "application/json, text/event-stream"},
                   {"Authorization", "Bearer " + token_}};
    req.body = line;
    req.read_timeout = std::chrono::seconds(700);  // a page may take its 10 minutes
    std::string body;
    // Named, not a temporary in the co_await's arguments (GCC 12 coroutine rule).
    std::function<bool(std::string_view)> on_data = [&body](std::string_view piece) {
      body.append(piece);
      return true;
    };
    auto res = co_await http::fetch(ex_, std::move(req), on_data);
    std::function<bool(const std::string&)> was_cancelled = [this](const std::string& id) {
      auto it = std::find(cancelled_.begin(), cancelled_.end(), id);
      if (it == cancelled_.end()) return false;
      cancelled_.erase(it);
      return true;
    };
    auto reply = bridge_reply(line, res, body, was_cancelled);
    if (reply.trouble) std::cerr << "leuria mcp-stdio: " << *reply.trouble << "\n";
    const boost::system::error_code more;  // named: no temporaries in a co_await's arguments (GCC 12)
    for (auto& out : reply.lines) co_await lines_.async_send(more, std::move(out), asio::as_tuple(asio::use_awaitable));
    --in_flight_;
    bytes_in_flight_ -= line.size();
    slot_free_.cancel();
    if (!reading_ && in_flight_ == 0) co_await end_output();
  }

  asio::awaitable<void> end_output() {
    const boost::system::error_code end = asio::error::eof;  // named: no temporaries in a co_await's arguments
    std::string none;
    co_await lines_.async_send(end, std::move(none), asio::as_tuple(asio::use_awaitable));
  }

  asio::io_context& ioc_;
  asio::any_io_executor ex_;
  asio::posix::stream_descriptor in_;
  asio::posix::stream_descriptor out_;
  std::string url_;
  std::string token_;
  LineChannel lines_;
  asio::steady_timer slot_free_;  // the reader's wait while kInFlight messages, or kInFlightBytes, are out
  std::size_t in_flight_ = 0;
  std::size_t bytes_in_flight_ = 0;  // the lines of those in flight
  bool reading_ = true;
  bool stdout_broken_ = false;
  // The ids the agent cancelled whose requests may still be out: such a request's answer ends with no
  // reply, and gets none from us either. The newest kCancelledKept (a cancel for a request already
  // answered is never looked up again).
  std::deque<std::string> cancelled_;
  int exit_code_ = 0;
};

}  // namespace

int mcp_stdio(const std::string& url) {
  const char* token = std::getenv("LEURIA_MCP_TOKEN");
  if (!token || !*token) {
    std::cerr << "leuria mcp-stdio: set LEURIA_MCP_TOKEN to the session's channel token.\n";
    return 1;
  }
  asio::io_context ioc;
  std::optional<StdioBridge> bridge;
  try {
    bridge.emplace(ioc, url, token);
  } catch (const boost::system::system_error& e) {  // stdin or stdout closed when we were started
    std::cerr << "leuria mcp-stdio: cannot use stdin and stdout (" << e.code().message() << ").\n";
    return 1;
  }
  bridge->start();
  ioc.run();
  return bridge->exit_code();
}

}  // namespace leuria::app
