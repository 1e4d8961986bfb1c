// The protocol's time limits at their real values. Every end-to-end test shortens them through
// LEURIA_TEST_TIMINGS, so this is where a wrong default would show: the AI starts within 60 s, an
// ended session stays readable 5 minutes, a page's tool call may wait 10 minutes, the engine pings
// the page every 15 s, a claim long-polls 25 s, a pairing request expires after 5 minutes, a No
// holds for 30 s, and at most 20 requests are pending.
#include <gtest/gtest.h>

#include <cstdlib>

#include "app/options.hpp"
#include "core/pairing.hpp"
#include "core/session.hpp"

using namespace leuria;
using namespace std::chrono_literals;

TEST(SpecTimings, TheEngineRunsWithTheProtocolsTimesWhenNoTestShortensThem) {
  ::unsetenv("LEURIA_TEST_TIMINGS");
  auto read = app::timings_from_env();
  ASSERT_TRUE(std::holds_alternative<app::Timings>(read));
  const auto& t = std::get<app::Timings>(read);
  EXPECT_EQ(t.session_start, 60s);
  EXPECT_EQ(t.session_retention, 5min);
  EXPECT_EQ(t.tool_call, 10min);
  EXPECT_EQ(t.ping, 15s);
  EXPECT_EQ(t.pairing.claim_wait, 25s);
  EXPECT_EQ(t.pairing.expiry, 5min);
  EXPECT_EQ(t.pairing.cooldown, 30s);
  EXPECT_EQ(t.pairing.max_pending, 20u);
}

TEST(SpecTimings, TheCoresOwnDefaultsAreTheSame) {
  const core::SessionLimits limits;
  EXPECT_EQ(limits.start_timeout, 60s);
  EXPECT_EQ(limits.retention, 5min);
  EXPECT_EQ(limits.tool_call_timeout, 10min);
  EXPECT_EQ(limits.live_per_origin, 4u);
  const core::PairingTimings pairing;
  EXPECT_EQ(pairing.claim_wait, 25s);
  EXPECT_EQ(pairing.expiry, 5min);
  EXPECT_EQ(pairing.cooldown, 30s);
  EXPECT_EQ(pairing.max_pending, 20u);
}

TEST(SpecTimings, ATestsShorterTimesAreReadAndAnUnknownOneIsRefused) {
  ::setenv("LEURIA_TEST_TIMINGS", "startTimeoutMs=1000,pingMs=200", 1);
  auto read = app::timings_from_env();
  ASSERT_TRUE(std::holds_alternative<app::Timings>(read));
  EXPECT_EQ(std::get<app::Timings>(read).session_start, 1s);
  EXPECT_EQ(std::get<app::Timings>(read).ping, 200ms);
  EXPECT_EQ(std::get<app::Timings>(read).tool_call, 10min);  // the rest keep theirs
  ::setenv("LEURIA_TEST_TIMINGS", "noSuchMs=5", 1);
  EXPECT_TRUE(std::holds_alternative<std::string>(app::timings_from_env()));
  ::unsetenv("LEURIA_TEST_TIMINGS");
}
