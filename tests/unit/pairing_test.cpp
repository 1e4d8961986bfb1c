#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <functional>
#include <thread>

#include "core/pairing.hpp"
#include "store/grants_file.hpp"
#include "temp_home.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using Result = boost::system::result<core::ClaimAnswer, core::PairingError>;

namespace {

struct Recorder : core::PairingObserver {
  std::vector<core::PairingView> requests;
  std::vector<core::Decision> decisions;
  void on_request(const core::PairingView& r) override { requests.push_back(r); }
  void on_decided(const core::PairingView&, core::Decision d) override { decisions.push_back(d); }
};

const std::string kNonceA(22, 'a');
const std::string kNonceB(22, 'b');
const std::string kSite = "https://shop.example";

struct Fixture {
  explicit Fixture(core::PairingMode mode, core::PairingTimings t = {50ms, 2000ms, 300ms, 20})
      : book(ioc.get_executor(), grants, mode, t, recorder) {}
  TempHome home;
  store::GrantsFile file{home.dir, [](const std::string&) {}};
  core::GrantBook grants{file, 60s};
  asio::io_context ioc;
  Recorder recorder;
  core::PairingBook book;

  // Starts a claim; its result lands in the returned slot when it answers.
  std::shared_ptr<std::optional<Result>> claim(std::string origin, std::optional<std::string> nonce,
                                               std::optional<std::string> app = std::nullopt,
                                               std::function<bool()> caller_gone = {}) {
    auto slot = std::make_shared<std::optional<Result>>();
    asio::co_spawn(ioc, book.claim(std::move(origin), std::move(nonce), std::move(app), {}, std::move(caller_gone)),
                   [slot](std::exception_ptr e, Result r) {
                     if (e) std::rethrow_exception(e);
                     *slot = r;
                   });
    return slot;
  }
  Result run_claim(std::string origin, std::optional<std::string> nonce) {
    auto slot = claim(std::move(origin), std::move(nonce));
    ioc.restart();
    while (!*slot) ioc.run_one();
    return **slot;
  }
  // Runs what is ready (claims started up to their wait), without waiting on the clock.
  void settle() {
    ioc.restart();
    ioc.poll();
  }
  template <class Done>
  void run_until(Done done) {
    ioc.restart();
    while (!done()) ioc.run_one();
  }
  void run_for(std::chrono::milliseconds d) {
    ioc.restart();
    ioc.run_for(d);
  }
};

}  // namespace

TEST(Pairing, NonceIsRequiredAndChecked) {
  Fixture f(core::PairingMode::claim_asks);
  EXPECT_EQ(f.run_claim(kSite, std::nullopt).error(), core::PairingError::nonce_missing);
  EXPECT_EQ(f.run_claim(kSite, "short").error(), core::PairingError::nonce_invalid);
  EXPECT_EQ(f.run_claim(kSite, "").error(), core::PairingError::nonce_invalid);
  EXPECT_TRUE(f.recorder.requests.empty());
}

TEST(Pairing, CliClaimAsksThenWaitsForTheVisitor) {
  Fixture f(core::PairingMode::claim_asks);
  auto r = f.run_claim(kSite, kNonceA);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, core::ClaimAnswer::Status::pending);
  ASSERT_EQ(f.recorder.requests.size(), 1u);
  const std::string id = f.recorder.requests[0].id;
  EXPECT_EQ(id.size(), 24u);
  EXPECT_TRUE(f.book.has_open_request(kSite));

  auto waiting = f.claim(kSite, kNonceA);
  f.run_for(10ms);
  EXPECT_FALSE(*waiting);
  ASSERT_TRUE(f.book.decide(id, true));
  f.run_for(10ms);
  ASSERT_TRUE(*waiting && **waiting);
  EXPECT_EQ((**waiting)->status, core::ClaimAnswer::Status::allowed);
  EXPECT_TRUE(f.grants.token_valid(kSite, (**waiting)->token));
  // The token is returned once; the request is forgotten.
  EXPECT_FALSE(f.book.find(id));
  EXPECT_FALSE(f.book.has_open_request(kSite));
}

// A page's fetch that timed out closed its connection while its claim waited: the answer must not go
// to it, since the token is returned once; the claim that is still there, or the next one, takes it.
// Claims wait 10 s here, so that nothing but the decision wakes them however slow the machine.
TEST(Pairing, AClaimWhoseCallerLeftTakesNothing) {
  const core::PairingTimings slow{10'000ms, 60'000ms, 300ms, 20};
  for (const bool allow : {true, false}) {
    Fixture f(core::PairingMode::claim_asks, slow);
    auto left = f.claim(kSite, kNonceA, std::nullopt, [] { return true; });  // asks, then waits
    auto there = f.claim(kSite, kNonceA, std::nullopt, [] { return false; });
    f.settle();
    ASSERT_EQ(f.recorder.requests.size(), 1u);
    ASSERT_TRUE(f.book.decide(f.recorder.requests[0].id, allow));
    f.run_until([&] { return *left && *there; });
    EXPECT_EQ((*left)->error(), core::PairingError::caller_gone);
    ASSERT_TRUE(**there);
    EXPECT_EQ((**there)->status, allow ? core::ClaimAnswer::Status::allowed : core::ClaimAnswer::Status::denied);
    if (allow) {
      EXPECT_TRUE(f.grants.token_valid(kSite, (**there)->token));
    }
  }
  // With no claim still there, the answer waits for the page's next one.
  Fixture f(core::PairingMode::claim_asks, slow);
  auto left = f.claim(kSite, kNonceA, std::nullopt, [] { return true; });
  f.settle();
  ASSERT_TRUE(f.book.decide(f.recorder.requests[0].id, true));
  f.run_until([&] { return bool(*left); });
  EXPECT_EQ((*left)->error(), core::PairingError::caller_gone);
  auto next = f.run_claim(kSite, kNonceA);
  ASSERT_TRUE(next);
  EXPECT_EQ(next->status, core::ClaimAnswer::Status::allowed);
  EXPECT_TRUE(f.grants.token_valid(kSite, next->token));
}

TEST(Pairing, ANewNonceUpdatesTheQuestionInsteadOfAskingTwice) {
  Fixture f(core::PairingMode::claim_asks);
  auto old_claim = f.claim(kSite, kNonceA);
  f.run_for(10ms);
  auto new_claim = f.claim(kSite, kNonceB);
  f.run_for(10ms);
  ASSERT_TRUE(*old_claim);
  EXPECT_EQ((**old_claim).error(), core::PairingError::unknown);
  EXPECT_EQ(f.recorder.requests.size(), 1u);
  f.book.decide(f.recorder.requests[0].id, true);
  f.run_for(10ms);
  ASSERT_TRUE(*new_claim && **new_claim);
  EXPECT_EQ((**new_claim)->status, core::ClaimAnswer::Status::allowed);
}

TEST(Pairing, AnOlderNonceCannotTakeTheQuestionBack) {
  Fixture f(core::PairingMode::claim_asks);
  EXPECT_EQ(f.run_claim(kSite, kNonceA)->status, core::ClaimAnswer::Status::pending);
  EXPECT_EQ(f.run_claim(kSite, kNonceB)->status, core::ClaimAnswer::Status::pending);
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::unknown);
  EXPECT_EQ(f.run_claim(kSite, kNonceB)->status, core::ClaimAnswer::Status::pending);
  EXPECT_EQ(f.recorder.requests.size(), 1u);
}

TEST(Pairing, OtherOriginsNeverGetTheAnswer) {
  Fixture f(core::PairingMode::claim_asks);
  f.run_claim(kSite, kNonceA);
  f.book.decide(f.recorder.requests[0].id, true);
  // The forger's claim with the victim's nonce is its own question, still pending.
  auto r = f.run_claim("https://evil.example", kNonceA);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, core::ClaimAnswer::Status::pending);
  EXPECT_FALSE(f.grants.has_grant("https://evil.example"));
  // Once answered, only the latest nonce collects: a wrong one from the right origin is 404.
  EXPECT_EQ(f.run_claim(kSite, kNonceB).error(), core::PairingError::unknown);
  EXPECT_EQ(f.run_claim(kSite, kNonceA)->status, core::ClaimAnswer::Status::allowed);
  // The collected nonce replayed never asks again.
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::unknown);
  EXPECT_EQ(f.recorder.requests.size(), 2u);  // the site's and the forger's
}

TEST(Pairing, ARetryWithoutNeedsKeepsThem) {
  Fixture f(core::PairingMode::claim_asks);
  core::Needs needs;
  needs.tools = true;
  auto first = std::make_shared<std::optional<Result>>();
  asio::co_spawn(f.ioc, f.book.claim(kSite, kNonceA, "Shop", needs), [first](std::exception_ptr, Result r) { *first = r; });
  f.run_for(100ms);
  f.run_claim(kSite, kNonceB);
  f.book.decide(f.recorder.requests[0].id, true);
  ASSERT_TRUE(f.run_claim(kSite, kNonceB));
  ASSERT_TRUE(f.grants.find(kSite));
  EXPECT_TRUE(f.grants.find(kSite)->needs.tools);
  EXPECT_EQ(f.grants.find(kSite)->app, "Shop");
}

TEST(Pairing, AnExpiredQuestionIsAnsweredUntilAClaimLearnsIt) {
  Fixture f(core::PairingMode::link_asks, {1000ms, 100ms, 300ms, 20});
  ASSERT_TRUE(f.book.link(kSite, kNonceA, std::nullopt, {}));
  f.run_for(150ms);
  EXPECT_TRUE(f.book.has_open_request(kSite));  // the page still needs to learn it expired
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::expired);
  EXPECT_FALSE(f.book.has_open_request(kSite));  // silent again
  EXPECT_EQ(f.book.decide(f.recorder.requests[0].id, true).error(), core::PairingError::expired);
}

TEST(Pairing, AfterANoEveryNewAttemptIs429) {
  Fixture f(core::PairingMode::claim_asks);
  f.run_claim(kSite, kNonceA);
  f.book.decide(f.recorder.requests[0].id, false);
  // Not yet collected: a new nonce is refused for the cooldown, not 404.
  EXPECT_EQ(f.run_claim(kSite, kNonceB).error(), core::PairingError::cooling_down);
  EXPECT_EQ(f.run_claim(kSite, kNonceA)->status, core::ClaimAnswer::Status::denied);
}

TEST(Pairing, NoMeansDeniedThenACooldown) {
  Fixture f(core::PairingMode::claim_asks);
  f.run_claim(kSite, kNonceA);
  f.book.decide(f.recorder.requests[0].id, false);
  auto r = f.run_claim(kSite, kNonceA);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, core::ClaimAnswer::Status::denied);
  EXPECT_EQ(f.run_claim(kSite, kNonceB).error(), core::PairingError::cooling_down);
  std::this_thread::sleep_for(350ms);  // nothing is scheduled, so wait on the clock
  auto again = f.run_claim(kSite, kNonceB);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, core::ClaimAnswer::Status::pending);
}

TEST(Pairing, AtMostTwentyPending) {
  Fixture f(core::PairingMode::claim_asks);
  for (int i = 0; i < 20; ++i) ASSERT_TRUE(f.run_claim("https://s" + std::to_string(i) + ".example", kNonceA));
  EXPECT_EQ(f.run_claim("https://s20.example", kNonceA).error(), core::PairingError::too_many);
  EXPECT_EQ(f.book.pending().size(), 20u);
}

TEST(Pairing, ExpiryAnswers410) {
  Fixture f(core::PairingMode::claim_asks, {1000ms, 100ms, 300ms, 20});
  auto waiting = f.claim(kSite, kNonceA);
  f.run_for(150ms);
  ASSERT_TRUE(*waiting);
  EXPECT_EQ((**waiting).error(), core::PairingError::expired);
  ASSERT_EQ(f.recorder.decisions.size(), 1u);
  EXPECT_EQ(f.recorder.decisions[0], core::Decision::expired);
  EXPECT_EQ(f.book.decide(f.recorder.requests[0].id, true).error(), core::PairingError::expired);
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::expired);
  // A new attempt (a fresh nonce) asks anew (and, with this test's short expiry, expires too).
  f.run_claim(kSite, kNonceB);
  ASSERT_EQ(f.recorder.requests.size(), 2u);
  EXPECT_NE(f.recorder.requests[1].id, f.recorder.requests[0].id);
}

TEST(Pairing, DecideTwiceIs410) {
  Fixture f(core::PairingMode::claim_asks);
  f.run_claim(kSite, kNonceA);
  const std::string id = f.recorder.requests[0].id;
  EXPECT_TRUE(f.book.decide(id, true));
  EXPECT_EQ(f.book.decide(id, false).error(), core::PairingError::already_decided);
  EXPECT_EQ(f.book.decide("nope", true).error(), core::PairingError::unknown);
}

TEST(Pairing, AppNameIsCutTo80Characters) {
  Fixture f(core::PairingMode::claim_asks);
  std::string app;
  for (int i = 0; i < 100; ++i) app += "é";
  auto slot = f.claim(kSite, kNonceA, app);
  f.run_for(100ms);
  ASSERT_EQ(f.recorder.requests.size(), 1u);
  EXPECT_EQ(f.recorder.requests[0].app->size(), 160u);  // 80 two-byte characters
}

TEST(Pairing, AppModeOnlyLinksAsk) {
  Fixture f(core::PairingMode::link_asks);
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::unknown);
  auto id = f.book.link(kSite, kNonceA, "Shop", {});
  ASSERT_TRUE(id);
  EXPECT_TRUE(f.book.has_open_request(kSite));
  // A second link updates the nonce of the same question.
  auto again = f.book.link(kSite, kNonceB, std::nullopt, {});
  ASSERT_TRUE(again);
  EXPECT_EQ(*again, *id);
  EXPECT_EQ(f.recorder.requests.size(), 1u);
  EXPECT_EQ(f.run_claim(kSite, kNonceA).error(), core::PairingError::unknown);
  EXPECT_EQ(f.run_claim(kSite, kNonceB)->status, core::ClaimAnswer::Status::pending);
  f.book.decide(*id, false);
  EXPECT_EQ(f.run_claim(kSite, kNonceB)->status, core::ClaimAnswer::Status::denied);
  EXPECT_FALSE(f.book.has_open_request(kSite));
  EXPECT_EQ(f.book.link(kSite, kNonceA, std::nullopt, {}).error(), core::PairingError::cooling_down);
}
