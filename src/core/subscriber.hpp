// One reader of a session's events (an SSE stream, an editor). Bounded, with two policies:
// coalesce, then disconnect. While a reader is behind, consecutive chunks (or thoughts) merge into
// one queued event, so a burst of text costs bytes, not entries. A reader that falls behind by
// kMaxQueuedEvents events or kMaxQueuedBytes bytes anyway has its queue dropped and is ended; a
// page then reopens the stream and gets the replay. Memory never grows with a slow reader, and a
// fast one loses nothing (clients skip replayed text by its length, not by counting chunks).
//
// Before either policy applies, a reader holding kHighWaterBytes is *full*: when every reader of a
// session is, its AI waits (Session::room()) and stops reading its model server or agent, so the
// kernel's buffers push back on the model instead of the engine's memory filling. A reader that
// drains, ends or goes away wakes it (Flow).
//
// A reader that can write without waiting (an SSE stream whose socket has no write in flight)
// installs a direct writer. Text pushed with `defer` (a backend handing over one read's chunks) then
// wakes nobody: deliver(), at the end of that read, has the direct writer write it at once, in one
// write for the whole read, and the reader's coroutine stays parked. Waking it meant a timer
// cancelled and armed again, a pass through the scheduler (and a poll of the reactor) and two
// coroutine resumptions per token (bench scenario 7).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/events.hpp"
#include "core/timer_grid.hpp"

namespace leuria::core {

inline constexpr std::size_t kMaxQueuedEvents = 4096;
inline constexpr std::size_t kMaxQueuedBytes = 8 * 1024 * 1024;
inline constexpr std::size_t kHighWaterBytes = 64 * 1024;

// The wake-up between a session's readers and its AI: the AI waits while a reader is full, and a
// reader that drains, ends or goes away wakes it. Shared, so a reader may outlive its session.
class Flow {
 public:
  explicit Flow(boost::asio::any_io_executor ex) : changed_(ex) {}
  // Until the next wake() (or close()). One waiter at a time: a session has one AI reading.
  boost::asio::awaitable<void> wait();
  void wake() { changed_.cancel(); }
  // The session is gone: wakes the waiter, and every later wait returns at once.
  void close() {
    closed_ = true;
    changed_.cancel();
  }

 private:
  bool closed_ = false;
  boost::asio::steady_timer changed_;
};

class Subscriber {
 public:
  explicit Subscriber(boost::asio::any_io_executor ex, std::shared_ptr<Flow> flow = {})
      : wake_(ex), idle_timer_(ex), flow_(std::move(flow)) {}
  ~Subscriber();
  Subscriber(const Subscriber&) = delete;
  Subscriber& operator=(const Subscriber&) = delete;

  // Queues an event. After a final event the subscriber ends once it has been read. A deferred
  // text event (chunk, thought) doesn't wake a parked reader that has a direct writer: deliver() does.
  void push(Event e, bool defer = false);
  // Queues a new reader's replay of the turn so far (Session::subscribe). It is a copy of text the
  // session keeps anyway, up to its own bound (SessionLimits::replay_bytes), so it doesn't count
  // toward the kMaxQueuedBytes a reader may fall behind: a replay as large as that bound would
  // otherwise end the reader before its first read, on every reconnect until the turn ended.
  void push_replay(Event e);
  // The end of what deferred pushes belong to: the direct writer writes what is queued, or the
  // reader is woken to write it.
  void deliver();
  // Installed by the reader while it reads (empty to remove): takes what it can write now (take_text)
  // and writes it without waiting. Returns false when the reader must be woken after all: the
  // socket took only part (the rest waits in the reader's writer for its flush) or could not be
  // written at once.
  void set_direct(std::function<bool()> write_now) { direct_ = std::move(write_now); }
  // Ends the subscriber without a final event (the session is going away, or it fell behind).
  void end();

  struct Next {
    // flush: a direct write left bytes unsent; the reader's writer sends them (nothing new to write).
    enum class What { event, idle, flush, end } what = What::end;
    Event event;
  };
  // The next event; `idle` when nothing came for `idle_after` (time for a keep-alive).
  boost::asio::awaitable<Next> next(std::chrono::milliseconds idle_after);
  // The next event if one is queued, without waiting: a writer sends what is queued behind the event
  // next() gave it in the same write.
  std::optional<Event> take();
  // The same, only for a text event (chunk, thought): what a direct writer may write on its own.
  std::optional<Event> take_text();

  bool ended() const { return ended_; }
  bool overflowed() const { return overflowed_; }
  // Holds kHighWaterBytes or more not yet read: the AI should wait.
  bool full() const { return !ended_ && bytes_ >= kHighWaterBytes; }

 private:
  // The queue: queue_[head_…] not yet read. A vector emptied once read, not a deque: a deque of
  // events holds a few per 512-byte block (one when they were 320 bytes), and allocated and freed a
  // block every few events.
  std::vector<Event> queue_;
  std::size_t head_ = 0;
  std::size_t bytes_ = 0;
  // The replay's cost, allowed beyond kMaxQueuedBytes until the replay (queue_[replay_at_]) is read.
  std::size_t replay_allowance_ = 0;
  std::size_t replay_at_ = 0;
  bool ended_ = false;  // no more events will be queued
  bool overflowed_ = false;
  // The waiter's wake-up: armed at the end of time and cancelled by push(), end() or the keep-alive.
  // The keep-alive has a timer of its own, armed once per idle period rather than once per event: a
  // timer armed per event was the engine's earliest, and Asio reprograms its timerfd whenever the
  // earliest timer is armed, a system call per token (bench scenario 2, paced).
  boost::asio::steady_timer wake_;
  GridTimer idle_timer_;  // on the grid: the keep-alives of idle streams due together fire together
  using TimePoint = std::chrono::steady_clock::time_point;
  bool waiting_ = false;      // next() is waiting
  bool deferred_ = false;     // deferred text is queued for deliver()
  bool flush_ = false;        // woken to flush what a direct write left
  std::chrono::milliseconds idle_after_{0};  // the waiter's keep-alive period
  std::function<bool()> direct_;
  TimePoint wait_idle_at_{};  // when the waiter's wait becomes idle
  std::shared_ptr<Flow> flow_;
  void watch_idle(TimePoint at);
  void on_idle_timer();
  bool empty() const { return head_ == queue_.size(); }
  void clear();
  Event pop();  // not empty()
  void room_changed() {
    if (flow_) flow_->wake();
  }
};

}  // namespace leuria::core
