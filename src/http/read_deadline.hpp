// Bytes: a connection's deadline for the next request's head, kept lazily. Moving it later, which a
// kept-alive connection does on every request, touches no timer: the timer is re-armed only when it
// fires before the deadline or the deadline moves earlier. Beast's per-operation timeout armed and
// cancelled a timer for every request instead, and each arming of the earliest timer is a
// timerfd_settime system call (bench scenario 1: one per request on a kept-alive connection).
// Also the deadline for a model server's next piece of a body (client.cpp) and for a WebSocket's
// next frame (websocket.cpp), which move at every read the same way. The timer is a core::GridTimer:
// one Asio timer for all the connections' deadlines due at the same time (core/timer_grid.hpp).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <chrono>
#include <functional>

#include "core/timer_grid.hpp"

namespace leuria::http {

class ReadDeadline {
 public:
  // on_expiry runs once when a set deadline passes (it closes the connection); never after the
  // ReadDeadline is destroyed. With a `coalesce` period, the timer fires on core::coalesced's grid
  // for it (up to a second late): a deadline that only ends silent peers, moved by traffic that
  // comes at intervals (a WebSocket's pongs), then shares its wakeups with the other timers of that
  // grid instead of waking the engine on its own.
  ReadDeadline(boost::asio::any_io_executor ex, std::function<void()> on_expiry,
               std::chrono::steady_clock::duration coalesce = {});
  ~ReadDeadline();
  ReadDeadline(const ReadDeadline&) = delete;
  ReadDeadline& operator=(const ReadDeadline&) = delete;

  // Touches only this object, which lives in the reading coroutine's frame (warm at every read), not the
  // grid's lists: with 1,000 streams every stream's state is cold at each read (bench scenario 7, perf).
  void set(std::chrono::steady_clock::duration from_now);
  void clear();  // no deadline until the next set()
  // No deadline, and no timer left to fire at the old one: for a connection that now streams or
  // has become a WebSocket, which may stay open for hours.
  void stop();

 private:
  using Clock = std::chrono::steady_clock;
  void arm();
  void on_timer();
  Clock::time_point due() const;  // when the timer is to fire for at_

  Clock::time_point at_ = Clock::time_point::max();  // max: none
  Clock::duration coalesce_{};
  std::function<void()> on_expiry_;
  core::GridTimer timer_;  // last: disarmed first, before what its call uses goes
};

}  // namespace leuria::http
