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
#include <chrono>
#include <cstdlib>
#include <deque>
#include <exception>
#include <functional>
#include <iostream>
#include <memory>
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
// The engine's stream of server messages: a keep-alive comes every 20 s (LEURIA_TEST_TIMINGS'
// mcpKeepAliveMs changes that for tests only), so one silent for this long is gone. A stream that ends or
// breaks is opened again after kFirstPause, then twice as long each time up to kLongestPause. Messages
// that come before the agent's notifications/initialized wait for it, up to kHeld (identical ones are
// one: the engine sends only notifications/tools/list_changed; past kHeld the oldest goes).
constexpr std::chrono::seconds kStreamSilence{70};
constexpr std::chrono::seconds kFirstPause{1};
constexpr std::chrono::seconds kLongestPause{30};
constexpr std::size_t kHeld = 16;
const char* const kToolsChanged = R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})";

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
        slot_free_(ex_),
        watch_pause_(ex_) {}

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
      // Read for its method only until the agent is initialized, and only a line that may name one of the
      // two (a tool call's arguments may be megabytes).
      std::string method;
      if (!initialized_ && line.find("initialize") != std::string::npos) method = message_method(line);
      if (method == "initialize" && !watching_) {
        // Before initialize goes: the engine listens for changes before the agent first lists the tools.
        watching_ = true;
        asio::co_spawn(ex_, watch_changes(), on_exit());
      } else if (method == "notifications/initialized") {
        // What was held goes first, in order: a message that comes meanwhile is held behind it.
        const boost::system::error_code more;  // named: no temporaries in a co_await's arguments (GCC 12)
        while (!held_.empty()) {
          std::string message = std::move(held_.front());
          held_.pop_front();
          co_await lines_.async_send(more, std::move(message), asio::as_tuple(asio::use_awaitable));
        }
        initialized_ = true;
      }
      ++in_flight_;
      bytes_in_flight_ += line.size();
      asio::co_spawn(ex_, forward(std::move(line)), on_exit());
    }
    reading_ = false;
    stop_watching();
    if (in_flight_ == 0) co_await end_output();
  }

  // What one opening of the engine's stream has read and not yet passed on (in watch_changes' frame).
  struct Watch {
    std::deque<std::string> arrived;  // at most one read's worth: a read waits until they are passed on
    bool opened = false;              // its 2xx head came
    bool reopened = false;            // a stream was open before this one
  };

  // The engine's stream of server messages (GET on the endpoint), for the agent: it says when the page's
  // tools change, as the engine's initialize promises (listChanged). Whole messages only, one a line; what
  // comes before the agent's notifications/initialized waits for it (MCP: a server sends no such messages
  // before). A stream that ends or breaks is opened again (kFirstPause, doubling to kLongestPause), and once
  // one is open again the agent hears that the tools changed: a change may have come while none was open.
  // The engine's 401 (the session has ended), 403, 404 or 405 (no such stream) ends the watch, with a
  // sentence on stderr; so does the end of stdin.
  asio::awaitable<void> watch_changes() {
    auto pause = kFirstPause;
    bool reopened = false;
    bool failing = false;  // the last attempt failed: a run of failures is told once
    while (!watch_stopped_) {
      http::ClientRequest req;
      req.method = "GET";
      req.url = url_;
      req.headers = {{"Accept", "text/event-stream"}, {"Authorization", "Bearer " + token_}};
      req.read_timeout = kStreamSilence;
      SseEvents events;
      Watch w;
      w.reopened = reopened;
      // Each read's messages wait in `arrived` until before_read has passed them on: the read after them
      // waits for stdout (backpressure, nothing dropped). Named functions, no capturing lambda coroutine (GCC 12).
      std::function<bool(std::string_view)> on_data = [&events, &w](std::string_view piece) {
        for (auto& data : events.feed(piece))
          if (auto line = message_line(data)) w.arrived.push_back(std::move(*line));
        return !events.overflowed();
      };
      req.must_wait = [&w] { return !w.opened || !w.arrived.empty(); };
      req.before_read = [this, &w] { return pass_on(w); };
      watch_abort_ = std::make_shared<http::Abort>();
      const auto began = std::chrono::steady_clock::now();
      auto res = co_await http::fetch(ex_, std::move(req), on_data, watch_abort_);
      // Only a stream that stayed open a while starts the pauses over: one that ends at once, again and
      // again, is opened no more often than a server that is down.
      const bool lasted = std::chrono::steady_clock::now() - began >= kLongestPause;
      if (watch_stopped_) break;
      if (auto last = events.finish())  // an event the stream's end cut its blank line from
        if (auto line = message_line(*last)) w.arrived.push_back(std::move(*line));
      if (res.status / 100 == 2) co_await pass_on(w);
      if (watch_stopped_) break;
      const unsigned status = res.status;
      if (status == 401 || status == 403 || status == 404 || status == 405) {
        std::cerr << "leuria mcp-stdio: the engine refused its stream of server messages (HTTP " << status
                  << (status == 401 ? ": the session has ended, or the token is not its own" : "")
                  << "); the agent will not hear when the page's tools change.\n";
        break;
      }
      if (w.opened) {
        reopened = true;
        failing = false;
      }
      if (w.opened && lasted) pause = kFirstPause;
      if (events.overflowed()) {
        std::cerr << "leuria mcp-stdio: a message over 4 MB came on the engine's stream; opening it again.\n";
      } else if (!w.opened && !failing) {
        failing = true;
        std::string why = res.error;
        if (why.empty()) why = "HTTP " + std::to_string(status);
        std::cerr << "leuria mcp-stdio: could not open the engine's stream of server messages (" << why
                  << "); trying again.\n";
      }
      watch_pause_.expires_after(pause);
      co_await watch_pause_.async_wait(asio::as_tuple(asio::use_awaitable));
      if (!w.opened || !lasted) pause = std::min(pause * 2, kLongestPause);
    }
  }

  // Passes on what the stream has read, before its next read (ClientRequest::before_read).
  asio::awaitable<void> pass_on(Watch& w) {
    if (!w.opened) {  // the head is in: the engine listens again
      w.opened = true;
      if (w.reopened) w.arrived.emplace_front(kToolsChanged);
    }
    const boost::system::error_code more;  // named: no temporaries in a co_await's arguments (GCC 12)
    while (!w.arrived.empty() && !watch_stopped_) {
      std::string line = std::move(w.arrived.front());
      w.arrived.pop_front();
      if (initialized_) {
        co_await lines_.async_send(more, std::move(line), asio::as_tuple(asio::use_awaitable));
        continue;
      }
      if (std::find(held_.begin(), held_.end(), line) != held_.end()) continue;
      if (held_.size() >= kHeld) held_.pop_front();
      held_.push_back(std::move(line));
    }
    w.arrived.clear();
  }

  // At the end of stdin: the stream's fetch and its pause end, so the bridge can exit once replies are out.
  void stop_watching() {
    watch_stopped_ = true;
    if (watch_abort_) watch_abort_->abort();
    watch_pause_.cancel();
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
  // The engine's stream of server messages (watch_changes).
  bool watching_ = false;     // opened at the agent's initialize
  bool initialized_ = false;  // the agent's notifications/initialized was read, and held_ is out: messages go out
  bool watch_stopped_ = false;
  std::deque<std::string> held_;  // until initialized_, at most kHeld, identical ones once
  std::shared_ptr<http::Abort> watch_abort_;
  asio::steady_timer watch_pause_;
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
