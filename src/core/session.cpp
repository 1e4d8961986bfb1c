#include "core/session.hpp"

#include <algorithm>

#include <boost/asio/co_spawn.hpp>

#include "core/page_tools.hpp"
#include "core/plain_text.hpp"
#include "core/random.hpp"

namespace leuria::core {

namespace asio = boost::asio;

std::string_view status_word(SessionStatus s) {
  switch (s) {
    case SessionStatus::pending_approval: return "pending_approval";
    case SessionStatus::starting: return "running";
    case SessionStatus::idle: return "idle";
    case SessionStatus::running: return "running";
    case SessionStatus::completed: return "completed";
    case SessionStatus::cancelled: return "cancelled";
    case SessionStatus::failed: return "failed";
  }
  return "failed";
}

Session::Session(asio::any_io_executor ex, Params p, BackendFactory& factory, const SessionLimits& limits,
                 std::shared_ptr<PageTools> tools, std::function<void(Session&)> on_ended)
    : ex_(ex), p_(std::move(p)), factory_(factory), limits_(limits), tools_(std::move(tools)),
      on_ended_(std::move(on_ended)), flow_(std::make_shared<Flow>(ex)), start_timer_(ex) {}

bool Session::consume_registration(std::string_view secret) {
  if (registered_ || is_final(status_) || !constant_time_equal(secret, p_.registration_secret)) return false;
  registered_ = true;
  return true;
}

Session::~Session() {
  flow_->close();
  if (backend_) backend_->shutdown();
}

// Every reader full, not any: a page that reconnected reads on while its old stream (a dead socket)
// waits for its write deadline; the old one is then bounded by kMaxQueuedBytes, not by a pause.
bool Session::reader_full() const {
  bool any = false;
  for (auto& w : subscribers_) {
    auto s = w.lock();
    if (!s || s->ended()) continue;
    if (!s->full()) return false;
    any = true;
  }
  return any;
}

// The flow is closed only by ~Session, so a live session need not ask it (and with 1,000 streams its
// line is one more cold read per token: bench scenario 7, perf).
bool Session::must_wait() const {
  return status_ == SessionStatus::running && !cancel_requested_ && reader_full();
}

asio::awaitable<void> Session::room() {
  // The flow outlives the session; `this` is only touched while a lock on it is held.
  auto flow = flow_;
  auto weak = weak_from_this();
  for (;;) {
    {
      auto self = weak.lock();
      if (!self || !must_wait()) co_return;
    }
    co_await flow->wait();
  }
}

// Between turns the replay is empty; its memory goes back too (a long turn's text may be megabytes).
void Session::forget_turn_text() {
  std::string().swap(turn_text_);
  replay_len_ = 0;
}

void Session::publish(Event e) {
  e.seq = ++seq_;
  // Each reader but the last gets a copy, the last the event itself: a page's stream, the one reader
  // a session mostly has, takes its token without a copy. Pushed in the list's order, as before.
  const bool defer = batch_depth_ > 0;
  std::shared_ptr<Subscriber> last;
  auto gone = std::remove_if(subscribers_.begin(), subscribers_.end(), [&](const std::weak_ptr<Subscriber>& w) {
    auto s = w.lock();
    if (!s || s->ended()) return true;
    if (last) last->push(e, defer);
    last = std::move(s);
    return false;
  });
  subscribers_.erase(gone, subscribers_.end());
  if (last) last->push(std::move(e), defer);
}

void Session::end_batch() {
  if (--batch_depth_ > 0) return;
  // deliver() only writes (a failed write wakes its reader for later): the list stays as it is.
  for (auto& w : subscribers_)
    if (auto s = w.lock()) s->deliver();
}

Event Session::final_event() const {
  Event e;
  e.kind = status_ == SessionStatus::completed ? EventKind::completed
           : status_ == SessionStatus::cancelled ? EventKind::cancelled
                                                 : EventKind::failed;
  if (e.kind == EventKind::failed) e.text = error_.value_or("The session failed");
  return e;
}

// Readers that went or ended. publish() drops them too, but no event comes while a session waits for
// approval or is idle: a client opening and dropping streams then grew the list without bound.
void Session::prune_readers() {
  auto gone = std::remove_if(subscribers_.begin(), subscribers_.end(), [](const std::weak_ptr<Subscriber>& w) {
    auto s = w.lock();
    return !s || s->ended();
  });
  subscribers_.erase(gone, subscribers_.end());
}

bool Session::has_reader() const {
  return std::any_of(subscribers_.begin(), subscribers_.end(), [](const std::weak_ptr<Subscriber>& w) {
    auto s = w.lock();
    return s && !s->ended();
  });
}

std::shared_ptr<Subscriber> Session::subscribe() {
  auto s = std::make_shared<Subscriber>(ex_, flow_);
  if (is_final(status_)) {
    s->push(final_event());
    return s;
  }
  touch();
  if (approved()) s->push(Event{EventKind::webmcp_ready});
  if (status_ == SessionStatus::idle) {
    if (last_turn_) s->push(*last_turn_);
    s->push(Event{EventKind::ready});
  }
  if (status_ == SessionStatus::running && replay_len_ > 0) {  // one chunk: the subscriber would merge them anyway
    Event chunk{EventKind::chunk};
    chunk.text = turn_text_.substr(0, replay_len_);
    s->push_replay(std::move(chunk));
  }
  prune_readers();
  subscribers_.push_back(s);
  // An AI paused because every reader was full goes on if this one has room: nothing else would wake
  // it until an old reader drained or its write deadline ended it (its queue may hold thoughts or tool
  // calls, which the replay doesn't repeat, so the new reader starts with room).
  if (status_ == SessionStatus::running && !s->full()) flow_->wake();
  return s;
}

void Session::page_left() {
  if (!is_final(status_) && maybe_unused_) maybe_unused_();
}

bool Session::reap_if_unused(std::chrono::steady_clock::time_point now, std::chrono::milliseconds limit) {
  const bool waiting = status_ == SessionStatus::pending_approval || status_ == SessionStatus::idle;
  if (!waiting || has_reader() || tools_->connected()) {
    unused_since_.reset();
    return false;
  }
  if (!unused_since_) unused_since_ = now;
  if (now - *unused_since_ < limit) return true;
  end(SessionStatus::cancelled, "No page used this session for " + duration_in_words(limit));
  return false;
}

auto Session::on_coroutine_end() {
  return [weak = weak_from_this()](std::exception_ptr e) {
    if (!e) return;
    auto self = weak.lock();
    if (!self) return;
    std::string what = "an unknown exception";
    try {
      std::rethrow_exception(e);
    } catch (const std::exception& x) {
      what = x.what();
    } catch (...) {
    }
    self->in_backend_ = false;
    // The core has no log of its own: the page's developer reads this in the stream's log events.
    self->on_log("[leuria] internal error: " + valid_utf8(what, 300));  // a debugging line, as an agent's stderr
    self->end(SessionStatus::failed, "The session stopped on an internal error in the engine");
  };
}

boost::system::result<void, SessionError> Session::approve() {
  if (status_ != SessionStatus::pending_approval)
    return SessionError{SessionError::Kind::bad_request,
                        is_final(status_) ? "Session has ended" : "Session is already approved"};
  status_ = SessionStatus::starting;
  publish(Event{EventKind::webmcp_ready});
  start_timer_.expires_after(limits_.start_timeout);
  start_timer_.async_wait([weak = weak_from_this(), this](boost::system::error_code ec) {
    auto self = weak.lock();
    if (!self || ec || status_ != SessionStatus::starting) return;
    end(SessionStatus::failed, "The AI did not start within " +
                                   std::to_string(limits_.start_timeout.count() / 1000) + " s");
  });
  asio::co_spawn(ex_, run_start(), on_coroutine_end());
  return {};
}

asio::awaitable<void> Session::run_start() {
  auto self = shared_from_this();
  if (status_ != SessionStatus::starting) co_return;  // ended before it began
  auto made = factory_.make(p_.ai, *this, tools_);
  if (!made) {
    end(SessionStatus::failed, made.error());
    co_return;
  }
  backend_ = *made;
  BackendConfig config;
  config.session_id = p_.id;
  config.system_prompt = p_.request.system_prompt;
  config.max_turns = p_.request.max_turns.value_or(limits_.default_max_turns);
  config.asked_max_turns = p_.request.max_turns;
  config.ai = p_.ai;
  config.mcp_url = p_.mcp_url;
  config.mcp_token = tools_->channel_token();
  auto started = co_await backend_->start(config);
  if (status_ != SessionStatus::starting) co_return;  // ended meanwhile (cancelled, timed out)
  start_timer_.cancel();
  if (!started) {
    end(SessionStatus::failed, started.error());
    co_return;
  }
  auto prompt = std::move(p_.request.prompt);
  auto attachments = std::move(p_.request.attachments);
  p_.request = {};  // consumed: an ended session keeps no attachments around
  if (prompt && !cancel_requested_) {
    co_await run_turn(std::move(*prompt), std::move(attachments));
  } else {
    // No prompt, or cancel-turn came while the AI started: a warm start.
    cancel_requested_ = false;
    status_ = SessionStatus::idle;
    publish(Event{EventKind::ready});
    page_left();
  }
}

boost::system::result<void, SessionError> Session::prompt(std::string text, std::vector<Attachment> attachments) {
  switch (status_) {
    case SessionStatus::idle: break;
    case SessionStatus::running:
      if (cancel_requested_ && !next_prompt_) {  // the running turn is stopping: this one follows it
        next_prompt_ = WaitingPrompt{std::move(text), std::move(attachments)};
        return {};
      }
      return SessionError{SessionError::Kind::bad_request, "A turn is already running"};
    case SessionStatus::starting:
      return SessionError{SessionError::Kind::bad_request, "The AI is still starting"};
    case SessionStatus::pending_approval:
      return SessionError{SessionError::Kind::bad_request, "Session is not approved yet"};
    default:
      return SessionError{SessionError::Kind::bad_request, "Agent session has ended. Start a new session."};
  }
  status_ = SessionStatus::running;  // at once, so a second prompt is refused
  asio::co_spawn(ex_, run_turn(std::move(text), std::move(attachments)), on_coroutine_end());
  return {};
}

asio::awaitable<void> Session::run_turn(std::string text, std::vector<Attachment> attachments) {
  auto self = shared_from_this();
  if (status_ != SessionStatus::running && status_ != SessionStatus::starting) co_return;
  status_ = SessionStatus::running;
  forget_turn_text();
  last_turn_.reset();
  publish(Event{EventKind::turn_start});
  const auto t0 = std::chrono::steady_clock::now();
  TurnOutcome outcome{TurnOutcome::End::cancelled, {}};
  if (!cancel_requested_) {  // a cancel-turn before the turn reached the AI: nothing to send
    in_backend_ = true;
    outcome = co_await backend_->prompt(build_prompt(text, attachments, backend_->accepts_images()));
    in_backend_ = false;
  }
  cancel_requested_ = false;
  if (status_ != SessionStatus::running) co_return;  // ended while the turn ran
  if (outcome.end == TurnOutcome::End::failed) {
    end(SessionStatus::failed, outcome.error);
    co_return;
  }
  Event done{EventKind::turn_completed};
  if (turn_text_.size() > limits_.turn_text_bytes) {
    turn_text_.resize(limits_.turn_text_bytes);
    turn_text_ += "\n[…the rest of this answer was too long to repeat here]";
  }
  done.details = std::make_shared<const EventDetails>(EventDetails{
      .turn = {.text = std::move(turn_text_),
               .duration_ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0)
                                  .count()}});
  forget_turn_text();
  status_ = SessionStatus::idle;
  last_turn_ = done;
  publish(std::move(done));
  if (next_prompt_) {  // a prompt came while this turn was being cancelled
    auto next = std::move(*next_prompt_);
    next_prompt_.reset();
    status_ = SessionStatus::running;
    asio::co_spawn(ex_, run_turn(std::move(next.text), std::move(next.attachments)), on_coroutine_end());
    co_return;
  }
  page_left();
}

void Session::cancel_turn() {
  next_prompt_.reset();
  if (status_ == SessionStatus::running && in_backend_) {
    cancel_requested_ = true;  // room() stops waiting: a cancelled turn's remaining output is read and let go
    flow_->wake();
    backend_->cancel_turn();
  } else if (status_ == SessionStatus::running || status_ == SessionStatus::starting) {
    // The turn hasn't reached the AI yet (or the AI is still starting): don't send it.
    cancel_requested_ = true;
  }
}

void Session::end(SessionStatus final_status, std::string error) {
  if (is_final(status_)) return;
  status_ = final_status;
  if (final_status == SessionStatus::failed) error_ = error.empty() ? "The session failed" : error;
  else if (!error.empty()) error_ = std::move(error);  // why it was cancelled (GET shows it; the event stays null)
  start_timer_.cancel();
  forget_turn_text();
  last_turn_.reset();
  p_.request = {};
  next_prompt_.reset();
  publish(final_event());
  for (auto& w : subscribers_)
    if (auto s = w.lock()) s->end();
  subscribers_.clear();
  flow_->wake();
  if (backend_) backend_->shutdown();
  tools_->end();  // the page's channel closes; waiting calls fail
  if (on_ended_) on_ended_(*this);
}

void Session::on_chunk(std::string text) {
  if (status_ != SessionStatus::running) return;
  // One copy of the turn's text serves both the replay and turn_completed, each with its bound (the
  // replay ends at a chunk's end; turn_completed's text is cut, and says so, when the turn ends).
  if (turn_text_.size() < std::max(limits_.replay_bytes, limits_.turn_text_bytes + 1)) turn_text_ += text;
  if (replay_len_ < limits_.replay_bytes) replay_len_ = turn_text_.size();
  publish_text(EventKind::chunk, std::move(text));
}

void Session::publish_text(EventKind kind, std::string text) {
  if (is_final(status_)) return;
  Event e{kind};
  e.text = std::move(text);
  publish(std::move(e));
}

void Session::on_thought(std::string text) { publish_text(EventKind::thought, std::move(text)); }

void Session::on_tool_call(ToolCallInfo call) {
  if (is_final(status_)) return;
  Event e{EventKind::tool_call};
  e.details = std::make_shared<const EventDetails>(EventDetails{.tool_call = std::move(call)});
  publish(std::move(e));
}

void Session::on_permission(PermissionInfo decision) {
  if (is_final(status_)) return;
  Event e{EventKind::permission};
  e.details = std::make_shared<const EventDetails>(EventDetails{.permission = std::move(decision)});
  publish(std::move(e));
}

void Session::on_log(std::string line) { publish_text(EventKind::log, std::move(line)); }

void Session::on_exit(int code) {
  // Before it started, any exit is a failure: a misconfigured command that prints its usage and exits 0
  // would otherwise end the session `completed`, and the page would show an empty answer.
  if (status_ == SessionStatus::starting) {
    end(SessionStatus::failed,
        "The AI '" + p_.ai.agent + "' stopped (exit code " + std::to_string(code) + ") before it started");
    return;
  }
  if (code == 0)
    end(SessionStatus::completed);
  else
    end(SessionStatus::failed, "Agent exited with code " + std::to_string(code));
}

void Session::on_failed(std::string error) { end(SessionStatus::failed, std::move(error)); }

}  // namespace leuria::core
