#include "core/subscriber.hpp"

#include "core/clock.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <utility>

namespace leuria::core {

namespace asio = boost::asio;

namespace {
constexpr std::size_t kEventOverhead = 256;  // what an event costs beyond its text
std::size_t cost(const Event& e) { return e.text.size() + e.turn().text.size() + kEventOverhead; }
bool is_text(const Event& e) { return e.kind == EventKind::chunk || e.kind == EventKind::thought; }
}  // namespace

asio::awaitable<void> Flow::wait() {
  if (closed_) co_return;
  changed_.expires_at(asio::steady_timer::time_point::max());
  co_await changed_.async_wait(asio::as_tuple(asio::use_awaitable));
}

Subscriber::~Subscriber() { room_changed(); }

void Subscriber::push(Event e, bool defer) {
  if (ended_) return;
  // A reader that is behind gets consecutive text of the same kind as one event: a burst of chunks
  // costs bytes, not queue entries.
  const bool merge = !empty() && (e.kind == EventKind::chunk || e.kind == EventKind::thought) &&
                     queue_.back().kind == e.kind;
  const std::size_t add = merge ? e.text.size() : cost(e);
  if ((!merge && queue_.size() - head_ >= kMaxQueuedEvents) || bytes_ + add > kMaxQueuedBytes + replay_allowance_) {
    // Fallen behind: drop what is queued and end; the reader reconnects and gets the replay.
    clear();
    bytes_ = 0;
    overflowed_ = true;
    ended_ = true;
    wake_.cancel();
    room_changed();
    return;
  }
  bytes_ += add;
  const bool final = e.is_final();
  if (merge)
    queue_.back().text += e.text;
  else
    queue_.push_back(std::move(e));
  if (final) ended_ = true;
  if (defer && !final && waiting_ && direct_ && is_text(queue_.back())) {
    deferred_ = true;
    return;
  }
  wake_.cancel();
}

void Subscriber::push_replay(Event e) {
  if (ended_ || e.text.empty()) return;
  replay_allowance_ = cost(e);
  replay_at_ = queue_.size();  // appended, not merged: what comes before it is never text
  push(std::move(e));
}

void Subscriber::deliver() {
  if (!deferred_) return;
  deferred_ = false;
  if (empty()) return;
  if (waiting_ && direct_) {
    if (direct_() && empty()) {
      // Written: the keep-alive counts from now, as if the reader had waited again.
      wait_idle_at_ = coalesced(std::chrono::steady_clock::now() + idle_after_, idle_after_);
      return;
    }
    if (empty()) flush_ = true;
  }
  wake_.cancel();
}

void Subscriber::end() {
  ended_ = true;
  wake_.cancel();
  room_changed();
}

asio::awaitable<Subscriber::Next> Subscriber::next(std::chrono::milliseconds idle_after) {
  if (empty() && !ended_ && !flush_) {
    idle_after_ = idle_after;
    watch_idle(coalesced(std::chrono::steady_clock::now() + idle_after, idle_after));
    waiting_ = true;
    wake_.expires_at(TimePoint::max());
    co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
    waiting_ = false;
  }
  if (!empty()) {
    flush_ = false;  // the event's write sends what was left first
    co_return Next{Next::What::event, pop()};
  }
  if (std::exchange(flush_, false)) co_return Next{Next::What::flush, {}};
  co_return Next{ended_ ? Next::What::end : Next::What::idle, {}};
}

// The keep-alive is armed for the first wait and then only moved on when it fires early: a wait
// that starts later than the armed one leaves the timer alone.
void Subscriber::watch_idle(TimePoint at) {
  wait_idle_at_ = at;
  if (idle_timer_.armed() && idle_timer_.expiry() <= at) return;
  idle_timer_.arm(at, [this] { on_idle_timer(); });  // replaces a call pending for a later time
}

void Subscriber::on_idle_timer() {
  if (!waiting_) return;  // the writer is busy: its next wait arms the timer again
  if (std::chrono::steady_clock::now() < wait_idle_at_) {
    watch_idle(wait_idle_at_);  // events came meanwhile: the current wait started later
    return;
  }
  wake_.cancel();
}

std::optional<Event> Subscriber::take() {
  if (empty()) return std::nullopt;
  return pop();
}

std::optional<Event> Subscriber::take_text() {
  if (empty() || !is_text(queue_[head_])) return std::nullopt;
  return pop();
}

Event Subscriber::pop() {
  const bool was_full = full();
  Event e = std::move(queue_[head_++]);
  // The replay is read. It sits first or second (after webmcp_ready), so it is read long before the
  // queue is compacted below, and replay_at_ needs no moving then.
  if (replay_allowance_ && head_ > replay_at_) replay_allowance_ = 0;
  if (empty()) {
    clear();
    bytes_ = 0;
  } else {
    bytes_ -= std::min(bytes_, cost(e));
    // A reader that stays a little behind never empties the queue: read slots go once they are half.
    if (head_ >= 32 && head_ * 2 >= queue_.size()) {
      queue_.erase(queue_.begin(), queue_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  if (was_full && !full()) room_changed();
  return e;
}

void Subscriber::clear() {
  // A reader that keeps up reuses the same few slots; one that fell far behind gives the room back.
  constexpr std::size_t kKeptSlots = 8;
  if (queue_.capacity() > kKeptSlots)
    std::vector<Event>().swap(queue_);
  else
    queue_.clear();
  head_ = 0;
  replay_allowance_ = 0;
}

}  // namespace leuria::core
