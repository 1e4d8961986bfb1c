// core::GridTimer / core::TimerGrid: timers due at one time point fire in one wakeup of the engine, in
// the order armed, never early; a call replaced, disarmed or destroyed is never made; a call may arm,
// disarm or destroy any timer; an emptied earliest slot costs no wakeup; timers outliving their
// io_context, or a call that throws, lose nothing else.
#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <memory>
#include <optional>
#include <stdexcept>
#include <vector>

#include "core/timer_grid.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

namespace {
void run(asio::io_context& ioc) {
  ioc.restart();
  ioc.run_for(5s);  // until nothing is left to do; generous, for a loaded machine
}
core::TimerGrid& grid_of(asio::io_context& ioc) { return asio::use_service<core::TimerGrid>(ioc); }
}  // namespace

TEST(TimerGrid, TimersOfOneTimePointFireInOneWakeupInTheOrderArmed) {
  asio::io_context ioc;
  std::vector<std::unique_ptr<core::GridTimer>> timers;
  std::vector<int> order;
  const auto at = Clock::now() + 30ms;
  for (int i = 0; i < 100; ++i) {
    timers.push_back(std::make_unique<core::GridTimer>(ioc.get_executor()));
    timers.back()->arm(at, [&order, i, at] {
      EXPECT_GE(Clock::now(), at);
      order.push_back(i);
    });
  }
  EXPECT_EQ(grid_of(ioc).slots(), 1u);
  run(ioc);
  ASSERT_EQ(order.size(), 100u);
  for (int i = 0; i < 100; ++i) EXPECT_EQ(order[i], i);
  EXPECT_EQ(grid_of(ioc).wakeups(), 1u);
  EXPECT_EQ(grid_of(ioc).slots(), 0u);
  for (auto& t : timers) EXPECT_FALSE(t->armed());
}

TEST(TimerGrid, TimePointsFireInTimeOrderNeverEarly) {
  asio::io_context ioc;
  core::GridTimer late(ioc.get_executor()), early(ioc.get_executor());
  std::vector<std::pair<char, Clock::time_point>> fired;
  const auto start = Clock::now();
  late.arm(start + 60ms, [&] { fired.emplace_back('l', Clock::now()); });
  early.arm(start + 20ms, [&] { fired.emplace_back('e', Clock::now()); });
  EXPECT_EQ(early.expiry(), start + 20ms);
  run(ioc);
  ASSERT_EQ(fired.size(), 2u);
  EXPECT_EQ(fired[0].first, 'e');
  EXPECT_GE(fired[0].second, start + 20ms);
  EXPECT_EQ(fired[1].first, 'l');
  EXPECT_GE(fired[1].second, start + 60ms);
  EXPECT_EQ(grid_of(ioc).wakeups(), 2u);
}

TEST(TimerGrid, ReplacedDisarmedOrDestroyedCallsAreNeverMade) {
  asio::io_context ioc;
  int replaced = 0, kept = 0, disarmed = 0, destroyed = 0;
  core::GridTimer a(ioc.get_executor()), b(ioc.get_executor());
  a.arm(Clock::now() + 10ms, [&] { ++replaced; });
  a.arm(Clock::now() + 20ms, [&] { ++kept; });
  b.arm(Clock::now() + 10ms, [&] { ++disarmed; });
  b.disarm();
  b.disarm();  // twice is harmless
  EXPECT_FALSE(b.armed());
  {
    core::GridTimer c(ioc.get_executor());
    c.arm(Clock::now() + 10ms, [&] { ++destroyed; });
  }
  run(ioc);
  EXPECT_EQ(replaced, 0);
  EXPECT_EQ(kept, 1);
  EXPECT_EQ(disarmed, 0);
  EXPECT_EQ(destroyed, 0);
}

TEST(TimerGrid, ACallMayArmDisarmOrDestroyAnyTimer) {
  asio::io_context ioc;
  const auto at = Clock::now() + 20ms;
  core::GridTimer first(ioc.get_executor()), other(ioc.get_executor()), past(ioc.get_executor());
  auto doomed = std::make_unique<core::GridTimer>(ioc.get_executor());
  int again = 0, doomed_calls = 0, other_calls = 0, past_calls = 0;
  std::function<void()> rearm = [&] {
    if (++again < 3) first.arm(Clock::now() + 10ms, rearm);  // itself, later
  };
  first.arm(at, [&] {
    doomed.reset();  // waits in the same slot, behind this one
    other.disarm();  // waits in a later slot
    past.arm(Clock::now() - 1ms, [&] { ++past_calls; });  // already due
    rearm();
  });
  doomed->arm(at, [&] { ++doomed_calls; });
  other.arm(at + 30ms, [&] { ++other_calls; });
  run(ioc);
  EXPECT_EQ(again, 3);
  EXPECT_EQ(doomed_calls, 0);
  EXPECT_EQ(other_calls, 0);
  EXPECT_EQ(past_calls, 1);
  EXPECT_EQ(grid_of(ioc).slots(), 0u);
}

TEST(TimerGrid, AnEmptiedEarliestSlotCostsNoWakeup) {
  asio::io_context ioc;
  core::GridTimer soon(ioc.get_executor()), later(ioc.get_executor());
  int calls = 0;
  soon.arm(Clock::now() + 10ms, [&] { ++calls; });
  later.arm(Clock::now() + 40ms, [&] { ++calls; });
  soon.disarm();  // a connection that began to stream: its deadline is stopped
  EXPECT_EQ(grid_of(ioc).slots(), 1u);
  run(ioc);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(grid_of(ioc).wakeups(), 1u);

  core::GridTimer only(ioc.get_executor());
  only.arm(Clock::now() + 10ms, [&] { ++calls; });
  only.disarm();  // nothing left: the Asio timer is cancelled, and run() has no work
  const auto start = Clock::now();
  run(ioc);
  EXPECT_EQ(grid_of(ioc).wakeups(), 1u);
  EXPECT_LT(Clock::now() - start, 5s);
}

TEST(TimerGrid, TimersMayOutliveTheirIoContext) {
  std::optional<core::GridTimer> outlives;
  bool called = false;
  {
    asio::io_context ioc;
    outlives.emplace(ioc.get_executor());
    outlives->arm(Clock::now() + 1h, [&] { called = true; });
  }
  EXPECT_FALSE(outlives->armed());  // let go at the io_context's shutdown
  outlives.reset();                 // touches no grid (ASan would see it)
  EXPECT_FALSE(called);
}

TEST(TimerGrid, ACallThatThrowsLosesTheRestOfItsSlotNot) {
  asio::io_context ioc;
  const auto at = Clock::now() + 10ms;
  core::GridTimer a(ioc.get_executor()), b(ioc.get_executor());
  int b_calls = 0;
  a.arm(at, [] { throw std::runtime_error("broken promise"); });
  b.arm(at, [&] { ++b_calls; });
  ioc.restart();
  EXPECT_THROW(ioc.run_for(5s), std::runtime_error);
  EXPECT_TRUE(b.armed());
  run(ioc);
  EXPECT_EQ(b_calls, 1);
}
