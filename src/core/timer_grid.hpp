// Timers that many objects keep armed at once and that need not be exact (a tool channel's ping, an
// event stream's keep-alive, a silent peer's read deadline), kept by one Asio timer per io_context
// instead of one each.
//
// Why: Asio keeps its timers in a binary heap, and taking a due timer out of it swaps heap entries
// and writes the new position into each timer it moved, timer objects spread over the engine's
// memory. After the engine has been idle those are cold pages, and on a VM a cold page costs
// microseconds (its translation has to be walked again): with 100 idle sessions, about 300 timers due
// every 15 s, perf put 43% of the engine's idle CPU in timer_queue::get_ready_timers (bench scenario
// 11). Here the timers due at one time point are one list, taken off whole: a slot's firing touches
// each of its timers once, to call it, and nothing else. Callers round their times with
// core::coalesced so that most timers share a slot.
//
// One thread: the grid is a service of the io_context the timers' executor belongs to, used only
// from the one thread that runs it, like the rest of the core's state: no locks.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/execution_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>

namespace leuria::core {

class TimerGrid;

namespace grid_detail {
// A place in a circular list of the timers due at one time point; each list has a sentinel.
struct Link {
  Link* prev = nullptr;  // null: in no list
  Link* next = nullptr;
};
}  // namespace grid_detail

// One pending call at a time point. Not copyable nor movable: the grid links to it in place.
class GridTimer : private grid_detail::Link {
 public:
  using Clock = std::chrono::steady_clock;

  explicit GridTimer(const boost::asio::any_io_executor& ex);
  ~GridTimer();  // drops a pending call uncalled
  GridTimer(const GridTimer&) = delete;
  GridTimer& operator=(const GridTimer&) = delete;

  // Calls fn once, at `at` or later, from the io_context's run(), never from within arm(). Arming
  // again replaces the pending call, which is then never made; so does disarm(). Timers armed for the
  // same time point fire in one wakeup, in the order they were armed. fn may arm, disarm or destroy
  // any timer, this one included; it must not throw, nor own what owns this timer.
  void arm(Clock::time_point at, std::function<void()> fn);
  void disarm();
  bool armed() const { return prev != nullptr; }
  Clock::time_point expiry() const { return at_; }  // of the pending call, while armed()

 private:
  friend class TimerGrid;
  TimerGrid& grid_;
  Clock::time_point at_{};
  std::function<void()> fn_;
};

// The io_context's grid (asio::use_service): the lists of armed GridTimers, one per time point, and
// one Asio timer armed for the earliest.
class TimerGrid : public boost::asio::execution_context::service {
 public:
  using Clock = std::chrono::steady_clock;
  static boost::asio::execution_context::id id;

  explicit TimerGrid(boost::asio::execution_context& ctx);
  ~TimerGrid() override;

  std::uint64_t wakeups() const { return wakeups_; }  // the Asio timer's firings, for the tests
  std::size_t slots() const { return slots_.size(); }  // time points with timers armed

 private:
  friend class GridTimer;
  using Link = grid_detail::Link;

  using Slots = std::map<Clock::time_point, Link>;
  Slots::iterator slot(Clock::time_point at);  // the list for `at`, made empty if there is none
  void wake_for_earliest();                    // wakeup_ set for the earliest slot, or cancelled
  void link(GridTimer& t);
  void unlink(GridTimer& t);
  void wake_at(Clock::time_point at);
  void on_wakeup();
  void put_back(Link& due, Clock::time_point at);
  void shutdown() override;

  // Stable addresses: a slot's sentinel is linked to by its timers.
  Slots slots_;
  std::optional<boost::asio::steady_timer> wakeup_;  // made with the first GridTimer's executor
  Clock::time_point wakeup_at_ = Clock::time_point::max();  // what wakeup_ waits for; max: nothing
  bool firing_ = false;  // on_wakeup is calling timers: it arms wakeup_ itself when done
  bool shut_down_ = false;  // the io_context is going: nothing is linked any more
  std::uint64_t wakeups_ = 0;
};

}  // namespace leuria::core
