// A session: one running AI for one caller, with that caller's tools, producing an ordered stream
// of events. Owned by the io thread (no locks). SessionBook finds sessions and enforces limits;
// this class is the state machine:
//
//   pending_approval --approve--> starting --AI up--> idle <--> running (a turn)
//          \                          \                 \          /
//           +--------------------------+--> completed | cancelled | failed (final, readable 5 min)
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/container/small_vector.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/attachments.hpp"
#include "core/backend.hpp"
#include "core/page_tools.hpp"
#include "core/subscriber.hpp"
#include "core/tools.hpp"

namespace leuria::core {

enum class SessionStatus { pending_approval, starting, idle, running, completed, cancelled, failed };
std::string_view status_word(SessionStatus s);  // as pages see it (starting is "running")
inline bool is_final(SessionStatus s) {
  return s == SessionStatus::completed || s == SessionStatus::cancelled || s == SessionStatus::failed;
}

struct SessionLimits {
  std::size_t live_per_origin = 4;
  std::chrono::milliseconds start_timeout{60'000};
  std::chrono::milliseconds retention{300'000};  // an ended session stays readable this long
  // ...but a site keeps at most this many ended sessions: a page that prepares and closes in a loop
  // would otherwise pile up 5 minutes of them (each with its conversation), and the lookups that walk
  // every session would slow for all sites. The oldest is forgotten first (it then answers 404).
  // Local processes (they run as the visitor) have no such quota.
  std::size_t kept_ended_per_origin = 64;
  int default_max_turns = 10;
  std::size_t replay_bytes = 8 * 1024 * 1024;  // the current turn's chunks kept for new streams
  std::size_t turn_text_bytes = 4 * 1024 * 1024;  // the text repeated in turn_completed
  std::chrono::milliseconds tool_call_timeout{600'000};  // a call waits this long for the page
  // A session waiting for approval or idle that no page has used this long (no stream read it, no tool
  // channel was open, no request came for it) ends cancelled. A page whose close-on-unload never went out
  // (a crashed tab, a killed browser) can't close it: it lost the id, and the origin's 4 live sessions
  // would be held (and idle agents kept running) until the engine stopped. 0: never.
  std::chrono::milliseconds unused_timeout{600'000};
};

// Why an action was refused; adapters map `kind` to their protocol (400 / 404).
struct SessionError {
  enum class Kind { bad_request, not_found } kind = Kind::bad_request;
  std::string message;
};

struct PrepareRequest {
  std::optional<std::string> prompt;
  std::vector<Attachment> attachments;
  std::optional<std::string> system_prompt;
  std::optional<int> max_turns;
};

class Session final : public BackendSink, public std::enable_shared_from_this<Session> {
 public:
  struct Params {
    std::string id;
    std::string origin;
    std::string created_at;
    std::string registration_secret;  // the one-time WebMCP registration token
    AiChoice ai;
    PrepareRequest request;
    std::string mcp_url;  // where agents reach the page's tools
  };
  Session(boost::asio::any_io_executor ex, Params p, BackendFactory& factory, const SessionLimits& limits,
          std::shared_ptr<PageTools> tools, std::function<void(Session&)> on_ended);
  ~Session() override;

  const std::string& id() const { return p_.id; }
  const std::string& origin() const { return p_.origin; }
  const std::string& created_at() const { return p_.created_at; }
  const std::string& registration_secret() const { return p_.registration_secret; }
  const AiChoice& ai() const { return p_.ai; }
  SessionStatus status() const { return status_; }
  const std::optional<std::string>& error() const { return error_; }
  bool approved() const { return status_ != SessionStatus::pending_approval; }
  PageTools& page_tools() { return *tools_; }
  // The one-time WebMCP registration token: true the first time it is presented.
  bool consume_registration(std::string_view secret);

  boost::system::result<void, SessionError> approve();
  boost::system::result<void, SessionError> prompt(std::string text, std::vector<Attachment> attachments);
  // A prompt while a cancelled turn is still stopping waits for it (one at most), then runs.
  // A no-op when no turn runs; also drops a prompt waiting behind the stopping turn.
  void cancel_turn();
  // Ends the session with a final status (cancelled, completed, or failed with `error`).
  void end(SessionStatus final_status, std::string error = {});

  // A new reader: it first gets the replay (webmcp_ready once approved; if idle, the last turn's
  // turn_completed and then ready; the current turn's chunks; or the final event of an ended
  // session), then live events. The last turn_completed lets a page whose stream dropped just
  // before a turn ended still get its answer.
  std::shared_ptr<Subscriber> subscribe();

  // The page used the session (a request for it came): its unused time starts again.
  void touch() { unused_since_.reset(); }
  // A page's stream or tool channel went, or a turn ended: the session may now be unused, and the
  // book's sweep must run (it stops while every live session is in use, so an engine whose pages are all
  // there wakes for nothing but their pings).
  void page_left();
  void on_maybe_unused(std::function<void()> f) { maybe_unused_ = std::move(f); }
  // SessionBook's sweep: a session that waits for approval or is idle, with no reader and no tool
  // channel, is unused from the first sweep that sees it so; once it has been for `limit`, it ends
  // cancelled. A turn, a start, a reader or a channel resets the count. True while it is counting (the
  // sweep must come again), false once it ended or while it is in use.
  bool reap_if_unused(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit);
  // Slots in the readers' list (readers gone are pruned as others come): for tests.
  std::size_t reader_slots() const { return subscribers_.size(); }

  // BackendSink
  void on_chunk(std::string text) override;
  void on_thought(std::string text) override;
  void on_tool_call(ToolCallInfo call) override;
  void on_permission(PermissionInfo decision) override;
  void on_log(std::string line) override;
  void on_exit(int code) override;
  void on_failed(std::string error) override;
  // While a turn runs and every one of its readers is full (Subscriber::full), waits until one isn't. A cancel
  // or the session's end stops the wait; a reader that never reads is ended by its own door's write
  // deadline (an event stream's 30 s), which wakes it too.
  boost::asio::awaitable<void> room() override;
  bool must_wait() const override;
  void begin_batch() override { ++batch_depth_; }
  void end_batch() override;

 private:
  void forget_turn_text();
  void publish(Event e);
  void publish_text(EventKind kind, std::string text);
  Event final_event() const;
  boost::asio::awaitable<void> run_start();
  boost::asio::awaitable<void> run_turn(std::string text, std::vector<Attachment> attachments);

  boost::asio::any_io_executor ex_;
  Params p_;
  BackendFactory& factory_;
  const SessionLimits& limits_;
  std::shared_ptr<PageTools> tools_;
  bool registered_ = false;
  std::function<void(Session&)> on_ended_;
  SessionStatus status_ = SessionStatus::pending_approval;
  std::optional<std::string> error_;
  std::shared_ptr<AgentBackend> backend_;
  std::uint64_t seq_ = 0;
  // Inline room for one: a page has one reader, and a list on the heap was one more cold line per token
  // when 1,000 streams take turns (bench scenario 7, perf).
  boost::container::small_vector<std::weak_ptr<Subscriber>, 1> subscribers_;
  int batch_depth_ = 0;  // a backend is handing over one read (BackendSink::Batch)
  std::shared_ptr<Flow> flow_;  // the readers wake room() through it
  bool reader_full() const;
  bool has_reader() const;
  void prune_readers();
  // Ends the session failed if one of its coroutines threw: a detached one's exception was lost, and
  // the session stayed `running` (every later prompt got "A turn is already running").
  auto on_coroutine_end();
  // The current turn's chunk text so far: turn_completed's text, and the replay for new streams (its
  // first replay_len_ bytes). One string, not an Event per chunk: a 100,000-token turn kept 100,000
  // Events (320 bytes each when their rare members were inline), and not two (the replay and the
  // answer were the same text twice). A reader skips replayed text by its length, so how it is cut
  // doesn't matter.
  std::string turn_text_;
  std::size_t replay_len_ = 0;
  std::optional<Event> last_turn_;  // the last turn_completed, until the next turn starts
  bool in_backend_ = false;        // the current turn has reached the AI
  bool cancel_requested_ = false;  // cancel-turn before it did
  // A prompt that came while a cancelled turn was still stopping (the AI answers a cancel in its own
  // time): it runs as soon as that turn has ended, so "the next prompt works as usual" right after
  // cancel-turn's 200. At most one waits; a cancel-turn or the session's end drops it.
  struct WaitingPrompt {
    std::string text;
    std::vector<Attachment> attachments;
  };
  std::optional<WaitingPrompt> next_prompt_;
  boost::asio::steady_timer start_timer_;
  // Since when no page has used the session (see reap_if_unused); empty while one does.
  std::optional<std::chrono::steady_clock::time_point> unused_since_ = std::chrono::steady_clock::now();
  std::function<void()> maybe_unused_;  // the book's: arms its sweep
};

}  // namespace leuria::core
