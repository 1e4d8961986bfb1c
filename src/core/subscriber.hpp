// One reader of a session's events (an SSE stream, an editor). Bounded, with two policies:
// coalesce, then disconnect. While a reader is behind, consecutive chunks (or thoughts) merge into
// one queued event, so a burst of text costs bytes, not entries. A reader that falls behind by
// kMaxQueuedEvents events or kMaxQueuedBytes bytes anyway has its queue dropped and is ended; a
// page then reopens the stream and gets the replay. Memory never grows with a slow reader, and a
// fast one loses nothing (clients skip replayed text by its length, not by counting chunks).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>

#include "core/events.hpp"

namespace leuria::core {

inline constexpr std::size_t kMaxQueuedEvents = 4096;
inline constexpr std::size_t kMaxQueuedBytes = 8 * 1024 * 1024;

class Subscriber {
 public:
  explicit Subscriber(boost::asio::any_io_executor ex) : wake_(ex) {}

  // Queues an event. After a final event the subscriber ends once it has been read.
  void push(const Event& e);
  // Ends the subscriber without a final event (the session is going away, or it fell behind).
  void end();

  struct Next {
    enum class What { event, idle, end } what = What::end;
    Event event;
  };
  // The next event; `idle` when nothing came for `idle_after` (time for a keep-alive).
  boost::asio::awaitable<Next> next(std::chrono::milliseconds idle_after);

  bool ended() const { return ended_; }
  bool overflowed() const { return overflowed_; }

 private:
  std::deque<Event> queue_;
  std::size_t bytes_ = 0;
  bool ended_ = false;  // no more events will be queued
  bool overflowed_ = false;
  boost::asio::steady_timer wake_;
};

}  // namespace leuria::core
