// http::ReadDeadline: a lazily kept deadline fires once, when the latest deadline set has passed,
// never when cleared, earlier when moved earlier, never after its owner is gone, and, coalesced,
// on the grid of its period.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>

#include "http/read_deadline.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
// Runs `ioc` until it has nothing left to do (at most `d`: generous, for a loaded machine).
void run_for(asio::io_context& ioc, Clock::duration d) {
  ioc.restart();
  ioc.run_for(d);
}
}  // namespace

TEST(ReadDeadline, FiresOnceWhenTheLastDeadlineSetHasPassed) {
  asio::io_context ioc;
  int fired = 0;
  Clock::time_point when;
  http::ReadDeadline d(ioc.get_executor(), [&] { ++fired, when = Clock::now(); });
  const auto start = Clock::now();
  d.set(40ms);
  // Moved later three times before it would fire: no timer is re-armed for these, and it fires at the last.
  asio::steady_timer later(ioc, 20ms);
  int moves = 0;
  std::function<void(boost::system::error_code)> move = [&](boost::system::error_code) {
    d.set(40ms);
    if (++moves < 3) {
      later.expires_after(20ms);
      later.async_wait(move);
    }
  };
  later.async_wait(move);
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 1);
  EXPECT_GE(when - start, 95ms);  // 3 moves 20 ms apart, then 40 ms
}

TEST(ReadDeadline, NeverFiresWhenCleared) {
  asio::io_context ioc;
  int fired = 0;
  http::ReadDeadline d(ioc.get_executor(), [&] { ++fired; });
  d.set(20ms);
  d.clear();
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 0);
  d.set(20ms);  // and may be set again
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 1);
}

TEST(ReadDeadline, MovedEarlierFiresEarlier) {
  asio::io_context ioc;
  int fired = 0;
  http::ReadDeadline d(ioc.get_executor(), [&] { ++fired; });
  d.set(10s);
  d.set(30ms);
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 1);  // the io_context ran out of work long before 10 s: it fired at the earlier time
}

TEST(ReadDeadline, NeverFiresAfterItsOwnerIsGone) {
  asio::io_context ioc;
  int fired = 0;
  {
    http::ReadDeadline d(ioc.get_executor(), [&] { ++fired; });
    d.set(10ms);
  }
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 0);
}

TEST(ReadDeadline, CoalescedFiresOnTheGridNotBeforeTheDeadline) {
  asio::io_context ioc;
  int fired = 0;
  Clock::time_point when;
  // A coalescing period of 800 ms: a grid of 100 ms (core::coalesced), so up to 100 ms late.
  http::ReadDeadline d(ioc.get_executor(), [&] { ++fired, when = Clock::now(); }, 800ms);
  d.set(30ms);
  const auto deadline = Clock::now() + 35ms;
  d.set(35ms);  // moved later within the same slot of the grid: the same wakeup
  run_for(ioc, 5s);
  EXPECT_EQ(fired, 1);
  // Not before the grid's next point after the deadline (a timer never fires early).
  const auto grid_point = deadline + (100ms - deadline.time_since_epoch() % 100ms) % 100ms;
  EXPECT_GE(when, grid_point);
}
