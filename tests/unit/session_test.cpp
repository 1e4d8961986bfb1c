// The session state machine, with a scripted backend: statuses, replay, limits, ends.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <thread>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include <boost/json.hpp>
#include "adapters/web/session_codec.hpp"
#include "core/session_book.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;

namespace {

// A backend that answers each prompt with the prompt's text as two chunks, after `delay`.
struct ScriptedBackend final : core::AgentBackend, std::enable_shared_from_this<ScriptedBackend> {
  ScriptedBackend(asio::any_io_executor ex, core::BackendSink& sink) : ex(ex), sink(sink), timer(ex) {}
  asio::any_io_executor ex;
  core::BackendSink& sink;
  asio::steady_timer timer;
  std::chrono::milliseconds delay{0};
  std::optional<std::string> start_error;
  bool never_start = false;
  bool images = false;
  bool cancelled = false;
  bool shut = false;
  bool calls_a_tool = false;  // the turn reports a tool call between its two chunks
  int flood = 0;   // > 0: the turn is this many 8 KB chunks, each after sink.room() (a streaming model)
  bool flood_thoughts = false;  // ...of reasoning (thoughts), which a new stream's replay doesn't repeat
  bool throw_in_start = false;   // start() throws (a bug below the session)
  bool throw_in_prompt = false;  // prompt() throws
  int flooded = 0;  // chunks sent so far
  std::vector<std::vector<core::PromptBlock>> prompts;

  asio::awaitable<boost::system::result<void, std::string>> start(core::BackendConfig) override {
    if (throw_in_start) throw std::runtime_error("start broke");
    if (never_start) {
      timer.expires_after(1h);
      co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    }
    if (start_error) co_return *start_error;
    co_return boost::system::result<void, std::string>{};
  }
  bool accepts_images() const override { return images; }
  asio::awaitable<core::TurnOutcome> prompt(std::vector<core::PromptBlock> blocks) override {
    auto self = shared_from_this();
    prompts.push_back(blocks);
    cancelled = false;
    if (throw_in_prompt) throw std::runtime_error("prompt broke");
    if (flood > 0) {
      for (flooded = 0; flooded < flood;) {
        co_await sink.room();
        if (cancelled || shut) co_return core::TurnOutcome{core::TurnOutcome::End::cancelled, {}};
        if (flood_thoughts)
          sink.on_thought(std::string(8192, 'x'));
        else
          sink.on_chunk(std::string(8192, 'x'));
        ++flooded;
      }
      co_return core::TurnOutcome{};
    }
    sink.on_chunk("echo: ");
    timer.expires_after(delay);
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    if (cancelled) co_return core::TurnOutcome{core::TurnOutcome::End::cancelled, {}};
    if (calls_a_tool) sink.on_tool_call(core::ToolCallInfo{.id = "t1", .title = "Look it up", .status = "completed"});
    sink.on_chunk(blocks.front().text);
    co_return core::TurnOutcome{};
  }
  void cancel_turn() override {
    cancelled = true;
    timer.cancel();
  }
  void shutdown() override {
    shut = true;
    timer.cancel();
  }
};

struct Factory final : core::BackendFactory {
  asio::any_io_executor ex;
  std::function<void(ScriptedBackend&)> tune;
  std::shared_ptr<ScriptedBackend> last;
  boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> make(const core::AiChoice& ai,
                                                                              core::BackendSink& sink,
                                                                              std::shared_ptr<core::ToolRegistry>) override {
    if (ai.agent == "missing") return std::string("The AI 'missing' isn't set up");
    last = std::make_shared<ScriptedBackend>(ex, sink);
    if (tune) tune(*last);
    return std::shared_ptr<core::AgentBackend>(last);
  }
};

struct Fixture {
  asio::io_context ioc;
  Factory factory;
  core::SessionLimits limits;
  std::unique_ptr<core::SessionBook> book;
  explicit Fixture(core::SessionLimits l = {}) : limits(l) {
    factory.ex = ioc.get_executor();
    book = std::make_unique<core::SessionBook>(ioc.get_executor(), factory, limits, "");
  }
  std::shared_ptr<core::Session> prepare(std::optional<std::string> prompt = std::nullopt, std::string agent = "x") {
    core::PrepareRequest r;
    r.prompt = std::move(prompt);
    auto s = book->prepare("https://a.example", core::AiChoice{agent, {}}, std::move(r));
    EXPECT_TRUE(s);
    return *s;
  }
  void run(std::chrono::milliseconds d = 50ms) {
    ioc.restart();
    ioc.run_for(d);
  }
  // Drains a subscriber's queued events (without waiting).
  std::vector<core::Event> drain_events(core::Subscriber& sub) {
    std::vector<core::Event> out;
    for (;;) {
      std::optional<core::Subscriber::Next> n;
      asio::co_spawn(ioc, sub.next(1ms), [&](std::exception_ptr, core::Subscriber::Next x) { n = x; });
      ioc.restart();
      while (!n) ioc.run_one();
      if (n->what != core::Subscriber::Next::What::event) break;
      out.push_back(std::move(n->event));
    }
    return out;
  }
  std::vector<core::EventKind> drain(core::Subscriber& sub) {
    std::vector<core::EventKind> out;
    for (const auto& e : drain_events(sub)) out.push_back(e.kind);
    return out;
  }
};

using K = core::EventKind;

}  // namespace

TEST(Session, WarmStartGoesIdleAndSaysReady) {
  Fixture f;
  auto s = f.prepare();
  auto sub = s->subscribe();
  EXPECT_EQ(s->status(), core::SessionStatus::pending_approval);
  ASSERT_TRUE(s->approve());
  EXPECT_EQ(core::status_word(s->status()), "running");
  f.run();
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_EQ(f.drain(*sub), (std::vector<K>{K::webmcp_ready, K::ready}));
  EXPECT_EQ(s->approve().error().message, "Session is already approved");
}

TEST(Session, APromptIsATurnWithChunksAndASummary) {
  Fixture f;
  auto s = f.prepare("hello");
  auto sub = s->subscribe();
  s->approve();
  f.run();
  // Read after the turn: its two chunks arrive coalesced into one.
  EXPECT_EQ(f.drain(*sub), (std::vector<K>{K::webmcp_ready, K::turn_start, K::chunk, K::turn_completed}));
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  ASSERT_TRUE(s->prompt("again", {}));
  EXPECT_EQ(s->prompt("twice", {}).error().message, "A turn is already running");
  f.run();
  EXPECT_EQ(f.factory.last->prompts.size(), 2u);
}

// publish() hands the event itself to the last reader and a copy to each other one: every reader
// reads the same events, whole, with their text and details (a tool call's, a turn's).
TEST(Session, EveryReaderGetsEveryEventWhole) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) {
    b.calls_a_tool = true;
    b.delay = 5ms;
  };
  auto s = f.prepare("hello");
  std::vector<std::shared_ptr<core::Subscriber>> readers{s->subscribe(), s->subscribe(), s->subscribe()};
  s->approve();
  f.run();
  for (auto& r : readers) {
    const auto events = f.drain_events(*r);
    std::vector<K> kinds;
    for (const auto& e : events) kinds.push_back(e.kind);
    ASSERT_EQ(kinds, (std::vector<K>{K::webmcp_ready, K::turn_start, K::chunk, K::tool_call, K::chunk,
                                     K::turn_completed}));
    EXPECT_EQ(events[2].text, "echo: ");
    EXPECT_EQ(events[3].tool_call().id, "t1");
    EXPECT_EQ(events[3].tool_call().title, "Look it up");
    EXPECT_EQ(events[4].text, "hello");
    EXPECT_EQ(events[5].turn().text, "echo: hello");
    EXPECT_EQ(events[1].tool_call().id, "");  // an event without details reads empty ones
    for (std::size_t i = 1; i < events.size(); ++i) EXPECT_EQ(events[i].seq, events[i - 1].seq + 1);
  }
}

TEST(Session, ANewStreamGetsTheReplay) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 200ms; };
  auto s = f.prepare("hello");
  s->approve();
  f.run(30ms);  // the turn is running: one chunk so far
  auto late = s->subscribe();
  EXPECT_EQ(f.drain(*late), (std::vector<K>{K::webmcp_ready, K::chunk}));
  f.run(300ms);
  // Idle: the last turn's end (for a page whose stream dropped just before it), then ready.
  auto idle = s->subscribe();
  EXPECT_EQ(f.drain(*idle), (std::vector<K>{K::webmcp_ready, K::turn_completed, K::ready}));
  // A warm start has no last turn.
  auto warm = f.prepare();
  warm->approve();
  f.run(50ms);
  auto fresh = warm->subscribe();
  EXPECT_EQ(f.drain(*fresh), (std::vector<K>{K::webmcp_ready, K::ready}));
}

TEST(Session, CancelTurnKeepsTheSession) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 10s; };
  auto s = f.prepare("hello");
  s->approve();
  f.run(20ms);
  EXPECT_EQ(s->status(), core::SessionStatus::running);
  s->cancel_turn();
  f.run(20ms);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  s->cancel_turn();  // idle: a no-op
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
}

// The spec: after cancel-turn "the next prompt works as usual". An AI stops in its own time, so a
// prompt sent right after cancel-turn's 200 waits for the stopping turn instead of getting 400.
TEST(Session, APromptRightAfterCancelTurnRunsWhenTheTurnHasStopped) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 10s; };
  auto s = f.prepare("hello");
  auto sub = s->subscribe();
  s->approve();
  f.run(20ms);
  ASSERT_EQ(s->status(), core::SessionStatus::running);
  s->cancel_turn();
  ASSERT_TRUE(s->prompt("next", {}));  // the cancelled turn hasn't ended yet
  EXPECT_EQ(s->status(), core::SessionStatus::running);
  EXPECT_EQ(s->prompt("a third", {}).error().message, "A turn is already running");  // one waits, no more
  f.factory.last->delay = 0ms;
  f.run(20ms);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  ASSERT_EQ(f.factory.last->prompts.size(), 2u);
  EXPECT_EQ(f.factory.last->prompts[1].front().text, "next");
  auto events = f.drain_events(*sub);
  std::vector<K> kinds;
  for (const auto& e : events) kinds.push_back(e.kind);
  EXPECT_EQ(kinds, (std::vector<K>{K::webmcp_ready, K::turn_start, K::chunk, K::turn_completed, K::turn_start, K::chunk,
                                   K::turn_completed}));
  EXPECT_EQ(events.back().turn().text, "echo: next");

  // A cancel-turn drops a prompt waiting behind the stopping turn; so does the session's end.
  f.factory.last->delay = 10s;
  ASSERT_TRUE(s->prompt("long", {}));
  f.run(20ms);
  s->cancel_turn();
  ASSERT_TRUE(s->prompt("dropped", {}));
  s->cancel_turn();
  f.run(20ms);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_EQ(f.factory.last->prompts.size(), 3u);
  ASSERT_TRUE(s->prompt("long again", {}));
  f.run(20ms);
  s->cancel_turn();
  ASSERT_TRUE(s->prompt("dropped too", {}));
  s->end(core::SessionStatus::completed);
  f.run(20ms);
  EXPECT_EQ(s->status(), core::SessionStatus::completed);
  EXPECT_EQ(f.factory.last->prompts.size(), 4u);
}

TEST(Session, EndingIsFinalAndReadable) {
  Fixture f;
  auto s = f.prepare();
  s->approve();
  f.run();
  s->end(core::SessionStatus::completed);
  EXPECT_TRUE(f.factory.last->shut);
  EXPECT_EQ(s->prompt("x", {}).error().message, "Agent session has ended. Start a new session.");
  s->end(core::SessionStatus::cancelled);  // no change
  EXPECT_EQ(s->status(), core::SessionStatus::completed);
  auto sub = s->subscribe();
  EXPECT_EQ(f.drain(*sub), (std::vector<K>{K::completed}));
}

TEST(Session, StartFailuresFailTheSession) {
  Fixture f;
  auto s = f.prepare(std::nullopt, "missing");
  s->approve();
  f.run();
  EXPECT_EQ(s->status(), core::SessionStatus::failed);
  EXPECT_EQ(s->error(), "The AI 'missing' isn't set up");
}

TEST(Session, TheAiMustStartInTime) {
  core::SessionLimits l;
  l.start_timeout = 50ms;
  Fixture f(l);
  f.factory.tune = [](ScriptedBackend& b) { b.never_start = true; };
  auto s = f.prepare();
  s->approve();
  f.run(100ms);
  EXPECT_EQ(s->status(), core::SessionStatus::failed);
  EXPECT_EQ(s->error(), "The AI did not start within 0 s");
}

TEST(Session, AgentExitCodes) {
  Fixture f;
  auto a = f.prepare();
  a->approve();
  f.run();
  a->on_exit(0);
  EXPECT_EQ(a->status(), core::SessionStatus::completed);
  auto b = f.prepare();
  b->approve();
  f.run();
  b->on_exit(3);
  EXPECT_EQ(b->status(), core::SessionStatus::failed);
  EXPECT_EQ(b->error(), "Agent exited with code 3");
}

TEST(SessionBook, FourLiveSessionsPerOriginAndOnlyTheOwnerSeesThem) {
  Fixture f;
  std::vector<std::shared_ptr<core::Session>> live;
  for (int i = 0; i < 4; ++i) live.push_back(f.prepare());
  auto fifth = f.book->prepare("https://a.example", {}, {});
  ASSERT_FALSE(fifth);
  EXPECT_EQ(fifth.error().kind, core::SessionError::Kind::bad_request);
  EXPECT_TRUE(f.book->prepare("https://b.example", {}, {}));
  EXPECT_FALSE(f.book->find(live[0]->id(), "https://b.example"));
  EXPECT_TRUE(f.book->find(live[0]->id(), "https://a.example"));
  live[0]->end(core::SessionStatus::completed);
  EXPECT_TRUE(f.book->prepare("https://a.example", {}, {}));
}

TEST(SessionBook, EndedSessionsAreForgottenAfterRetention) {
  core::SessionLimits l;
  l.retention = 30ms;
  Fixture f(l);
  auto s = f.prepare();
  const std::string id = s->id();
  s->end(core::SessionStatus::cancelled);
  EXPECT_TRUE(f.book->find(id, "https://a.example"));
  f.run(60ms);
  EXPECT_FALSE(f.book->find(id, "https://a.example"));
}

TEST(SessionBook, AnOriginKeepsOnlyItsNewestEndedSessions) {
  core::SessionLimits l;
  l.kept_ended_per_origin = 3;
  Fixture f(l);
  std::vector<std::string> ids;
  for (int i = 0; i < 5; ++i) {
    auto s = f.prepare();
    ids.push_back(s->id());
    s->end(core::SessionStatus::completed);
  }
  auto other = f.book->prepare("https://b.example", {}, {});
  ASSERT_TRUE(other);
  (*other)->end(core::SessionStatus::completed);
  EXPECT_FALSE(f.book->find(ids[0], "https://a.example"));
  EXPECT_FALSE(f.book->find(ids[1], "https://a.example"));
  for (int i = 2; i < 5; ++i) EXPECT_TRUE(f.book->find(ids[i], "https://a.example")) << i;
  EXPECT_TRUE(f.book->find((*other)->id(), "https://b.example")) << "another origin's quota is its own";
  auto live = f.prepare();  // a live session is never forgotten for the quota
  f.run(10ms);              // the forgotten sessions' cancelled timers do nothing
  EXPECT_TRUE(f.book->find(live->id(), "https://a.example"));
  EXPECT_TRUE(f.book->find(ids[4], "https://a.example"));
}

TEST(SessionBook, LocalProcessesHaveNoEndedQuotaAndEndingAWholeSiteAtItsQuotaIsSafe) {
  core::SessionLimits l;
  l.kept_ended_per_origin = 1;
  l.live_per_origin = 8;
  Fixture f(l);
  std::vector<std::string> local;
  for (int i = 0; i < 5; ++i) {
    auto s = f.book->prepare("", {}, {});
    ASSERT_TRUE(s);
    local.push_back((*s)->id());
    (*s)->end(core::SessionStatus::completed);
  }
  for (auto& id : local) EXPECT_TRUE(f.book->find(id, "")) << "a local process's ended sessions all stay readable";
  // Several of a site's sessions end at once (revocation) while its quota is 1: each end forgets the one
  // before it, sessions the loop has already passed.
  std::vector<std::string> site;
  for (int i = 0; i < 6; ++i) site.push_back(f.prepare()->id());
  f.book->end_origin("https://a.example");
  std::size_t kept = 0;
  for (auto& id : site)
    if (auto s = f.book->find(id, "https://a.example")) {
      ++kept;
      EXPECT_EQ(s->status(), core::SessionStatus::cancelled);
    }
  EXPECT_EQ(kept, 1u);
  f.book.reset();  // and the book's own end (end_all) with a site at its quota
}

TEST(SessionBook, EndOriginCancelsItsLiveSessions) {
  Fixture f;
  auto a = f.prepare();
  auto other = f.book->prepare("https://b.example", {}, {});
  f.book->end_origin("https://a.example");
  EXPECT_EQ(a->status(), core::SessionStatus::cancelled);
  EXPECT_EQ((*other)->status(), core::SessionStatus::pending_approval);
}

TEST(SessionBook, MaxTurnsIsClamped) {
  Fixture f;
  core::PrepareRequest r;
  r.max_turns = 500;
  auto s = f.book->prepare("o", {}, r);
  ASSERT_TRUE(s);
}

TEST(Subscriber, ASlowReaderIsDisconnectedNotBuffered) {
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  core::Event e{core::EventKind::log};
  e.text = std::string(1000, 'x');
  for (std::size_t i = 0; i < core::kMaxQueuedEvents + 10; ++i) sub.push(e);
  EXPECT_TRUE(sub.ended());
  EXPECT_TRUE(sub.overflowed());
}

TEST(Subscriber, ABurstOfChunksCoalescesUntilTheByteBound) {
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  core::Event chunk{core::EventKind::chunk};
  chunk.text = "ab";
  for (std::size_t i = 0; i < core::kMaxQueuedEvents * 4; ++i) sub.push(chunk);
  EXPECT_FALSE(sub.ended());  // one queued event holding all the text
  core::Event big{core::EventKind::chunk};
  big.text = std::string(core::kMaxQueuedBytes, 'x');
  sub.push(big);
  EXPECT_TRUE(sub.overflowed());
}

TEST(Subscriber, AReaderThatKeepsUpIsNeverCutOff) {
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  core::Event chunk{core::EventKind::chunk};
  chunk.text = "abc";
  for (int burst = 0; burst < 50'000; ++burst) {
    for (int i = 0; i < 4; ++i) sub.push(chunk);
    std::optional<core::Subscriber::Next> n;
    asio::co_spawn(ioc, sub.next(1ms), [&](std::exception_ptr, core::Subscriber::Next x) { n = x; });
    ioc.restart();
    while (!n) ioc.run_one();
    ASSERT_EQ(n->event.text, "abcabcabcabc");
  }
  EXPECT_FALSE(sub.ended());
}

TEST(Subscriber, AReaderThatStaysBehindGetsEveryEventInOrder) {
  // Never empty: two events come for every one read, then the reader catches up. The read slots
  // at the queue's front are reclaimed as it goes; the order and the texts must survive that.
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  int pushed = 0;
  int read = 0;
  auto push_one = [&] {
    core::Event e{core::EventKind::log};  // log lines never merge
    e.text = std::to_string(pushed++);
    sub.push(e);
  };
  for (int i = 0; i < 3000; ++i) {
    push_one();
    push_one();
    auto e = sub.take();
    ASSERT_TRUE(e);
    ASSERT_EQ(e->text, std::to_string(read++));
  }
  while (auto e = sub.take()) ASSERT_EQ(e->text, std::to_string(read++));
  EXPECT_EQ(read, pushed);
  EXPECT_FALSE(sub.ended());
  push_one();  // an emptied queue takes events again
  auto e = sub.take();
  ASSERT_TRUE(e);
  EXPECT_EQ(e->text, std::to_string(read));
}

// A reader's waits, each logged as what it returned and when (ms since the start).
struct WaitLog {
  std::vector<std::pair<core::Subscriber::Next::What, long>> got;
  std::size_t count(core::Subscriber::Next::What w) const {
    return static_cast<std::size_t>(std::count_if(got.begin(), got.end(), [&](auto& g) { return g.first == w; }));
  }
};

asio::awaitable<void> read_for(core::Subscriber& sub, std::chrono::milliseconds idle_after, int waits, WaitLog& log) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < waits; ++i) {
    auto n = co_await sub.next(idle_after);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
    log.got.emplace_back(n.what, static_cast<long>(ms.count()));
    if (n.what == core::Subscriber::Next::What::end) co_return;
  }
}

TEST(Subscriber, AWaitTurnsIdleOnlyWhenNothingCameForItsPeriod) {
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  WaitLog log;
  // Events every 10 ms for 200 ms, each wait allowed 150 ms: never idle. Then silence: idle.
  asio::co_spawn(ioc, read_for(sub, 150ms, 21, log), asio::detached);
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        asio::steady_timer t(ioc);
        for (int i = 0; i < 20; ++i) {
          t.expires_after(10ms);
          co_await t.async_wait(asio::use_awaitable);
          sub.push(core::Event{core::EventKind::log});
        }
      },
      asio::detached);
  ioc.run_for(2s);
  ASSERT_EQ(log.got.size(), 21u);
  EXPECT_EQ(log.count(core::Subscriber::Next::What::event), 20u);
  EXPECT_EQ(log.got.back().first, core::Subscriber::Next::What::idle);
  EXPECT_GE(log.got.back().second - log.got[19].second, 150);  // a whole period after the last event
}

TEST(Subscriber, AKeepAliveDueWhileTheWriterIsBusyWaitsForItsNextWait) {
  asio::io_context ioc;
  core::Subscriber sub(ioc.get_executor());
  WaitLog log;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        co_await read_for(sub, 20ms, 1, log);  // waits (the keep-alive armed for 20 ms); an event comes
        asio::steady_timer busy(ioc, 60ms);    // the writer is busy past the keep-alive
        co_await busy.async_wait(asio::use_awaitable);
        co_await read_for(sub, 20ms, 1, log);  // nothing comes: idle, a whole period later
      },
      asio::detached);
  ioc.poll();  // the reader waits
  sub.push(core::Event{core::EventKind::log});
  ioc.run_for(2s);
  ASSERT_EQ(log.got.size(), 2u);
  EXPECT_EQ(log.got[0].first, core::Subscriber::Next::What::event);
  EXPECT_EQ(log.got[1].first, core::Subscriber::Next::What::idle);
  EXPECT_GE(log.got[1].second, 20);  // counted from that wait's start, not from the timer's
}

TEST(Subscriber, AKeepAlivePendingAfterTheReaderIsGoneIsHarmless) {
  asio::io_context ioc;
  auto sub = std::make_shared<core::Subscriber>(ioc.get_executor());
  WaitLog log;
  asio::co_spawn(ioc, read_for(*sub, 5ms, 1, log), asio::detached);
  ioc.poll();  // the reader waits, its keep-alive armed
  sub->push(core::Event{core::EventKind::log});
  ioc.poll();
  ASSERT_EQ(log.got.size(), 1u);
  // The keep-alive (due in 5 ms) fires in the same turn of the loop as a timer due before it, whose
  // handler drops the reader: the keep-alive's handler is then already on its way, and runs after.
  asio::steady_timer before(ioc, std::chrono::steady_clock::now());
  before.async_wait([&](boost::system::error_code) { sub.reset(); });
  std::this_thread::sleep_for(20ms);
  ioc.run_for(50ms);
  EXPECT_FALSE(sub);
}

TEST(Subscriber, TakeGivesWhatIsQueuedWithoutWaitingAndFreesRoom) {
  asio::io_context ioc;
  auto flow = std::make_shared<core::Flow>(ioc.get_executor());
  core::Subscriber sub(ioc.get_executor(), flow);
  EXPECT_FALSE(sub.take());  // nothing queued: no event, no wait
  sub.push(core::Event{core::EventKind::webmcp_ready});
  sub.push(core::Event{core::EventKind::turn_start});
  core::Event chunk{core::EventKind::chunk};
  chunk.text = std::string(core::kHighWaterBytes, 'x');
  sub.push(chunk);
  EXPECT_TRUE(sub.full());
  auto a = sub.take();
  auto b = sub.take();
  auto c = sub.take();
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->kind, core::EventKind::webmcp_ready);
  EXPECT_EQ(b->kind, core::EventKind::turn_start);
  EXPECT_EQ(c->text.size(), core::kHighWaterBytes);
  EXPECT_FALSE(sub.full());  // taken events free the reader's room as next() does
  EXPECT_FALSE(sub.take());
}

TEST(Session, CancelTurnWhileTheAiStartsSkipsTheFirstPrompt) {
  Fixture f;
  auto s = f.prepare("hello");
  auto sub = s->subscribe();
  s->approve();
  s->cancel_turn();  // still starting
  f.run();
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_TRUE(f.factory.last->prompts.empty());
  EXPECT_EQ(f.drain(*sub), (std::vector<K>{K::webmcp_ready, K::ready}));
}

TEST(Session, CancelTurnBeforeTheTurnReachesTheAi) {
  Fixture f;
  auto s = f.prepare();
  s->approve();
  f.run();
  ASSERT_TRUE(s->prompt("hello", {}));
  s->cancel_turn();  // the turn's coroutine hasn't run yet
  f.run();
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_TRUE(f.factory.last->prompts.empty());
  ASSERT_TRUE(s->prompt("again", {}));  // and the next one works
  f.run();
  EXPECT_EQ(f.factory.last->prompts.size(), 1u);
}

TEST(Session, EndedBeforeTheStartRanSpawnsNothing) {
  Fixture f;
  auto s = f.prepare();
  s->approve();
  s->end(core::SessionStatus::cancelled);
  f.run();
  EXPECT_FALSE(f.factory.last);
}

TEST(Attachments, ImagesOrANoteAndTextFilesWrapped) {
  std::vector<core::Attachment> a(2);
  a[0].type = core::Attachment::Type::image;
  a[0].mime_type = "image/png";
  a[0].data = "AAAA";
  a[0].name = "cat.png";
  a[1].type = core::Attachment::Type::text;
  a[1].name = "notes \"v2\".txt";
  a[1].text = "hello";
  auto with = core::build_prompt("look", a, true);
  ASSERT_EQ(with.size(), 3u);
  EXPECT_EQ(with[1].type, core::PromptBlock::Type::image);
  EXPECT_NE(with[1].text.find("can't read images"), std::string::npos);  // for an AI that turns out not to
  EXPECT_EQ(with[2].text, "<file name=\"notes &quot;v2&quot;.txt\">hello</file>");
  auto without = core::build_prompt("look", a, false);
  EXPECT_EQ(without[1].type, core::PromptBlock::Type::text);
  EXPECT_NE(without[1].text.find("can't read images"), std::string::npos);
}

TEST(Session, TheReplayIsTheTurnsTextAndIsFreedAfterTheTurn) {
  Fixture f;
  // The turn runs until cancelled: 100,000 chunks take a while in a sanitizer build.
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 1h; };
  auto s = f.prepare("hello");
  s->approve();
  f.run(30ms);  // the turn is running
  std::string sent = "echo: ";
  for (int i = 0; i < 100000; ++i) {
    std::string t = "t" + std::to_string(i) + "\xC3\xA9 ";  // a two-byte character in every chunk
    sent += t;
    s->on_chunk(t);
  }
  auto late = s->subscribe();
  std::string replayed;
  std::size_t chunks = 0;
  for (;;) {
    std::optional<core::Subscriber::Next> n;
    asio::co_spawn(f.ioc, late->next(1ms), [&](std::exception_ptr, core::Subscriber::Next x) { n = x; });
    f.ioc.restart();
    while (!n) f.ioc.run_one();
    if (n->what != core::Subscriber::Next::What::event) break;
    if (n->event.kind != K::chunk) continue;
    ++chunks;
    replayed += n->event.text;
  }
  EXPECT_TRUE(replayed == sent) << replayed.size() << " bytes replayed, " << sent.size() << " sent";
  EXPECT_EQ(chunks, 1u);
  s->cancel_turn();
  f.run(300ms);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  auto idle = s->subscribe();
  EXPECT_EQ(f.drain(*idle), (std::vector<K>{K::webmcp_ready, K::turn_completed, K::ready}));
}

// A replay as large as its bound (8 MB, as large as a reader may fall behind) is the session's own
// text: a new reader gets it, and may still fall the usual 8 MB behind while it reads it. Counted
// against those 8 MB, it ended every reader that came during the turn before its first read.
TEST(Session, AReplayAsLargeAsItsBoundStillReachesANewReader) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 1h; };
  auto s = f.prepare("hello");
  s->approve();
  f.run(30ms);  // the turn is running
  const std::string piece(64 * 1024, 'x');
  const int to_bound = static_cast<int>(f.limits.replay_bytes / piece.size());
  for (int i = 0; i < to_bound + 8; ++i) s->on_chunk(piece);  // the replay stops at its bound
  auto late = s->subscribe();
  EXPECT_FALSE(late->overflowed());
  // Live text after the replay: up to the usual 8 MB behind, on top of the replay.
  for (int i = 0; i < 64; ++i) s->on_chunk(piece);
  EXPECT_FALSE(late->overflowed());
  std::size_t text = 0;
  std::vector<K> kinds;
  for (const auto& e : f.drain_events(*late)) {
    if (kinds.empty() || kinds.back() != e.kind) kinds.push_back(e.kind);
    if (e.kind == K::chunk) text += e.text.size();
  }
  EXPECT_EQ(kinds, (std::vector<K>{K::webmcp_ready, K::chunk}));
  EXPECT_GE(text, f.limits.replay_bytes + 64 * piece.size());
  // Once the replay is read, the allowance is gone: 8 MB more unread ends the reader as before.
  for (int i = 0; i < 129; ++i) s->on_chunk(piece);
  EXPECT_TRUE(late->overflowed());
  s->end(core::SessionStatus::cancelled);
  f.run(50ms);
}

// A session whose AI sends 200 chunks of 8 KB, each after room(), to a reader that reads none; run
// until the AI is paused.
static std::pair<std::shared_ptr<core::Session>, std::shared_ptr<core::Subscriber>> flooded_session(Fixture& f) {
  f.factory.tune = [](ScriptedBackend& b) { b.flood = 200; };
  auto s = f.prepare("go");
  auto stalled = s->subscribe();
  s->approve();
  f.run(50ms);
  return {s, stalled};
}

// Backpressure: a reader that doesn't read pauses the AI at about kHighWaterBytes; reading, leaving,
// a cancel or the session's end let it go on.
TEST(Session, AFullReaderPausesTheAiUntilItReads) {
  Fixture f;
  auto [s, stalled] = flooded_session(f);
  auto& b = *f.factory.last;
  const int per_fill = static_cast<int>(core::kHighWaterBytes / 8192);
  EXPECT_EQ(s->status(), core::SessionStatus::running);
  EXPECT_GE(b.flooded, per_fill - 1);
  EXPECT_LE(b.flooded, per_fill + 1);  // paused: not 200 chunks (1.6 MB) queued for a reader who reads none
  EXPECT_FALSE(stalled->overflowed());

  // A reader that reads makes room each time: the AI goes on, and the turn ends.
  auto read = f.drain(*stalled);
  EXPECT_EQ(b.flooded, 200);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_EQ(read.back(), K::turn_completed);

  // The next turn, read by nobody, pauses again; the reader leaving lets it run to its end.
  ASSERT_TRUE(s->prompt("again", {}));
  f.run(50ms);
  EXPECT_LE(b.flooded, per_fill + 1);
  stalled.reset();
  f.run(50ms);
  EXPECT_EQ(b.flooded, 200);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
}

TEST(Session, CancelAndEndLetAPausedAiGo) {
  Fixture f;
  auto [s, stalled] = flooded_session(f);
  auto& b = *f.factory.last;
  ASSERT_LT(b.flooded, 200);
  s->cancel_turn();  // the paused turn sees its cancel at once
  f.run(50ms);
  EXPECT_EQ(s->status(), core::SessionStatus::idle);
  EXPECT_LT(b.flooded, 200);

  ASSERT_TRUE(s->prompt("again", {}));
  f.run(50ms);
  ASSERT_EQ(s->status(), core::SessionStatus::running);
  s->end(core::SessionStatus::cancelled);
  f.run(50ms);
  EXPECT_TRUE(b.shut);
  EXPECT_LT(b.flooded, 200);  // the wait returned (the backend saw its shutdown), no more chunks
}

TEST(Session, APausedAiOutlivingItsSessionIsWokenNotLeft) {
  Fixture f;
  auto [s, stalled] = flooded_session(f);
  auto backend = f.factory.last;  // keeps the backend (and its paused turn) alive
  std::weak_ptr<core::Session> weak = s;
  s->end(core::SessionStatus::cancelled);
  s.reset();
  f.book.reset();  // the session goes away while its AI waits for room
  f.run(50ms);
  EXPECT_TRUE(weak.expired());
  EXPECT_TRUE(backend->shut);
}

// A text event's data is the text as one JSON string, escaped straight into the event: the same
// bytes boost::json writes for it, however much escaping grows it.
TEST(SessionEvents, ATextEventIsItsTextAsOneJsonLine) {
  Fixture f;
  auto s = f.prepare();
  const std::vector<std::string> texts = {"", "T1;", "quote \" back \\ line \n tab \t nul " + std::string(1, '\0') + " \x01 \xc3\xa9 \xf0\x9f\x98\x80",
                                          std::string(3000, '\x01'), std::string(100000, 'a')};
  const std::vector<std::pair<K, std::string>> kinds = {{K::chunk, "chunk"}, {K::thought, "thought"}, {K::log, "log"}, {K::failed, "failed"}};
  for (auto& [kind, name] : kinds) {
    for (auto& t : texts) {
      core::Event e;
      e.kind = kind;
      e.text = t;
      const std::string want = "event: " + name + "\ndata: " + boost::json::serialize(boost::json::string(t)) + "\n\n";
      EXPECT_EQ(web::encode_sse(e, *s, 8080), want) << name << " of " << t.size() << " bytes";
    }
  }
}

// A stream encodes its tokens into one buffer it keeps: each event goes after what is there.
TEST(SessionEvents, EventsAppendedToABufferFollowWhatItHeld) {
  Fixture f;
  auto s = f.prepare();
  std::string buffer = "event: chunk\ndata: \"held\"\n\n";
  std::string want = buffer;
  core::Event chunk{K::chunk};
  chunk.text = "a \"token\"";
  core::Event tool{K::tool_call};
  tool.details = std::make_shared<const core::EventDetails>(core::EventDetails{.tool_call = {.id = "call_1", .status = "in_progress"}});
  for (const core::Event* e : {&chunk, &tool, &chunk}) {
    web::append_sse(buffer, *e, *s, 8080);
    want += web::encode_sse(*e, *s, 8080);
  }
  EXPECT_EQ(buffer, want);
  buffer.clear();  // as the stream does before its next write: the capacity stays, the text goes
  web::append_sse(buffer, chunk, *s, 8080);
  EXPECT_EQ(buffer, web::encode_sse(chunk, *s, 8080));
}

TEST(Session, TheChunksOfOneReadReachADirectWriterInOneWrite) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 10s; };
  auto s = f.prepare("hello");
  s->approve();
  f.run();  // the turn runs: its first chunk is out, the second 10 s away
  auto sub = s->subscribe();
  std::vector<K> woken;
  asio::co_spawn(
      f.ioc,
      [&]() -> asio::awaitable<void> {
        for (;;) {
          auto n = co_await sub->next(10s);
          if (n.what != core::Subscriber::Next::What::event) co_return;
          woken.push_back(n.event.kind);
        }
      },
      asio::detached);
  f.run(10ms);  // the reader takes what a new stream gets, then waits
  EXPECT_EQ(woken, (std::vector<K>{K::webmcp_ready, K::chunk}));
  std::string written;
  int writes = 0;
  sub->set_direct([&] {
    ++writes;
    while (auto e = sub->take_text()) written += e->text;
    return true;
  });
  {
    core::BackendSink::Batch read(*s);
    {
      core::BackendSink::Batch nested(*s);
      s->on_chunk("x");
    }
    EXPECT_EQ(writes, 0);  // the outer read isn't over
    s->on_thought("y");
    s->on_chunk("z");
  }
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(written, "xyz");
  s->on_chunk("!");  // outside a read: the reader is woken for it, as before
  f.run(10ms);
  EXPECT_EQ(writes, 1);
  EXPECT_EQ(woken, (std::vector<K>{K::webmcp_ready, K::chunk, K::chunk}));
  sub->set_direct({});
  s->end(core::SessionStatus::completed);
  f.run(10ms);
}

// An AI that goes away before it started failed to start, whatever its exit code: a misconfigured
// command that prints its usage and exits 0 ended the session `completed`, and the page showed an empty
// answer. (Exit 0 once started still completes: AgentExitCodes.)
TEST(Session, AnAiThatExitsBeforeItStartedFailsWhateverItsCode) {
  for (int code : {0, 5}) {
    Fixture f;
    f.factory.tune = [](ScriptedBackend& b) { b.never_start = true; };
    auto s = f.prepare("hello");
    auto sub = s->subscribe();
    ASSERT_TRUE(s->approve());
    f.run(10ms);
    ASSERT_EQ(s->status(), core::SessionStatus::starting);
    s->on_exit(code);
    EXPECT_EQ(s->status(), core::SessionStatus::failed) << code;
    EXPECT_EQ(s->error(), "The AI 'x' stopped (exit code " + std::to_string(code) + ") before it started");
    const auto events = f.drain_events(*sub);
    ASSERT_EQ(events.size(), 2u);
    EXPECT_EQ(events[0].kind, K::webmcp_ready);
    EXPECT_EQ(events[1].kind, K::failed);
    EXPECT_EQ(events[1].text, *s->error());
    f.run(10ms);
    EXPECT_TRUE(f.factory.last->prompts.empty());
  }
}

// No event comes while a session waits for approval or is idle, so only subscribe() can let go of the
// readers that went: a client opening and dropping streams grew the list without bound.
TEST(Session, ReadersThatWentDoNotPileUp) {
  Fixture f;
  auto pending = f.prepare();
  auto kept = pending->subscribe();
  for (int i = 0; i < 1000; ++i) pending->subscribe();
  EXPECT_LE(pending->reader_slots(), 2u);
  auto idle = f.prepare();
  idle->approve();
  f.run();
  ASSERT_EQ(idle->status(), core::SessionStatus::idle);
  for (int i = 0; i < 1000; ++i) {
    auto sub = idle->subscribe();
    if (i % 2) sub->end();  // ended by its door (a write deadline) but still held
  }
  EXPECT_LE(idle->reader_slots(), 1u);
  EXPECT_EQ(f.drain(*kept), (std::vector<K>{}));  // the reader kept is still there, and reads on
  pending->approve();
  f.run();
  EXPECT_EQ(f.drain(*kept), (std::vector<K>{K::webmcp_ready, K::ready}));
}

// An AI paused while its one reader is full of thoughts (which a new stream's replay doesn't repeat): a
// new stream has room, and the AI goes on for it. Without a wake it stayed paused until the old reader
// read or its door's write deadline ended it.
TEST(Session, ANewReaderWithRoomWakesAPausedAi) {
  Fixture f;
  f.factory.tune = [](ScriptedBackend& b) {
    b.flood = 200;
    b.flood_thoughts = true;
  };
  auto s = f.prepare("go");
  auto stalled = s->subscribe();
  s->approve();
  f.run(50ms);
  auto& b = *f.factory.last;
  const int paused_at = b.flooded;
  ASSERT_LT(paused_at, 200);
  f.run(20ms);
  ASSERT_EQ(b.flooded, paused_at);  // paused
  auto fresh = s->subscribe();
  EXPECT_FALSE(fresh->full());
  f.run(50ms);
  EXPECT_GT(b.flooded, paused_at);  // it went on, until the new reader filled up too
  EXPECT_LT(b.flooded, 200);
  auto read = f.drain(*fresh);  // and reading lets it finish
  EXPECT_EQ(read.back(), K::turn_completed);
  EXPECT_EQ(b.flooded, 200);
}

// A coroutine's exception ends the session failed. With asio::detached it was lost, and the session
// stayed `running` for good (every later prompt got "A turn is already running").
TEST(Session, AnExceptionInTheAiEndsTheSessionFailedNotStuck) {
  {
    Fixture f;
    f.factory.tune = [](ScriptedBackend& b) { b.throw_in_prompt = true; };
    auto s = f.prepare();
    auto sub = s->subscribe();
    s->approve();
    f.run();
    ASSERT_EQ(s->status(), core::SessionStatus::idle);
    ASSERT_TRUE(s->prompt("hello", {}));
    f.run();
    EXPECT_EQ(s->status(), core::SessionStatus::failed);
    EXPECT_EQ(s->error(), "The session stopped on an internal error in the engine");
    EXPECT_TRUE(f.factory.last->shut);
    EXPECT_EQ(s->prompt("again", {}).error().message, "Agent session has ended. Start a new session.");
    const auto events = f.drain_events(*sub);
    ASSERT_GE(events.size(), 2u);
    EXPECT_EQ(events[events.size() - 2].kind, K::log);
    EXPECT_EQ(events[events.size() - 2].text, "[leuria] internal error: prompt broke");
    EXPECT_EQ(events.back().kind, K::failed);
  }
  for (bool in_start : {true, false}) {  // the first turn runs inside the start's coroutine
    Fixture f;
    f.factory.tune = [in_start](ScriptedBackend& b) {
      b.throw_in_start = in_start;
      b.throw_in_prompt = !in_start;
    };
    auto s = f.prepare("hello");
    s->approve();
    f.run();
    EXPECT_EQ(s->status(), core::SessionStatus::failed) << in_start;
    EXPECT_EQ(s->error(), "The session stopped on an internal error in the engine");
  }
}

namespace {
struct FakeLink final : core::PageLink {
  void send_call(const core::PageCall&) override {}
  void close() override {}
};
}  // namespace

// A session that waits for approval or is idle, with no stream reading it and no tool channel, ends
// (cancelled, with why) once unused for the limit: a page whose close-on-unload never went out can't
// close it (it lost the id), and it held one of the origin's 4 live sessions. A reader, a channel, a
// request for it or a turn keeps it.
TEST(SessionBook, ASessionNoPageUsesEndsAndFreesItsPlace) {
  core::SessionLimits l;
  // A limit well above the polls' 20 ms, so that a slow moment of a loaded machine between two polls
  // doesn't end the polled session.
  l.unused_timeout = 400ms;
  l.live_per_origin = 8;
  Fixture f(l);
  f.factory.tune = [](ScriptedBackend& b) { b.delay = 1h; };
  auto never_read = f.prepare();
  auto read_once = f.prepare();
  read_once->subscribe();  // and dropped at once
  auto reading = f.prepare();
  auto reader = reading->subscribe();
  auto with_channel = f.prepare();
  auto link = std::make_shared<FakeLink>();
  with_channel->page_tools().attach(link);
  auto idle = f.prepare();
  idle->approve();
  auto running = f.prepare("a long turn");
  running->approve();
  auto asked_for = f.prepare();
  f.run(40ms);
  ASSERT_EQ(idle->status(), core::SessionStatus::idle);
  ASSERT_EQ(running->status(), core::SessionStatus::running);
  for (int i = 0; i < 30; ++i) {  // a page polling it (GET), for more than the limit and a sweep
    ASSERT_TRUE(f.book->find(asked_for->id(), "https://a.example"));
    f.run(20ms);
  }
  for (auto* s : {&never_read, &read_once, &idle}) {
    EXPECT_EQ((*s)->status(), core::SessionStatus::cancelled);
    EXPECT_EQ((*s)->error(), "No page used this session for 400 milliseconds");
  }
  EXPECT_EQ(reading->status(), core::SessionStatus::pending_approval);
  EXPECT_EQ(with_channel->status(), core::SessionStatus::pending_approval);
  EXPECT_EQ(running->status(), core::SessionStatus::running);
  EXPECT_EQ(asked_for->status(), core::SessionStatus::pending_approval);
  EXPECT_EQ(f.book->live_count("https://a.example"), 4u);
  // The reader and the channel go (the web door says so: page_left): those sessions end in turn; the
  // turn's end starts its count.
  reader.reset();
  reading->page_left();
  with_channel->page_tools().detach(link.get());
  with_channel->page_left();
  running->cancel_turn();
  f.run(1200ms);
  EXPECT_EQ(reading->status(), core::SessionStatus::cancelled);
  EXPECT_EQ(with_channel->status(), core::SessionStatus::cancelled);
  EXPECT_EQ(running->status(), core::SessionStatus::cancelled);
  EXPECT_EQ(asked_for->status(), core::SessionStatus::cancelled);
  EXPECT_EQ(f.book->live_count("https://a.example"), 0u);
}

// The sweep wakes the engine only while a live session may be unused: with every page there (a reader,
// a channel), it stops; a page that leaves starts it again.
TEST(SessionBook, TheSweepStopsWhileEverySessionIsInUse) {
  core::SessionLimits l;
  l.unused_timeout = 400ms;
  Fixture f(l);
  auto read = f.prepare();
  auto reader = read->subscribe();
  auto channeled = f.prepare();
  auto link = std::make_shared<FakeLink>();
  channeled->page_tools().attach(link);
  EXPECT_TRUE(f.book->sweeping());  // armed by the prepares
  f.run(120ms);                     // a sweep (every 50 ms) finds both in use
  EXPECT_FALSE(f.book->sweeping());
  reader.reset();
  read->page_left();
  EXPECT_TRUE(f.book->sweeping());
  f.run(1000ms);
  EXPECT_EQ(read->status(), core::SessionStatus::cancelled);
  EXPECT_EQ(channeled->status(), core::SessionStatus::pending_approval);
  EXPECT_FALSE(f.book->sweeping()) << "only a session in use is left";
  EXPECT_TRUE(f.book->find(channeled->id(), "https://a.example"));  // a request arms it once more
  EXPECT_TRUE(f.book->sweeping());
}

TEST(SessionBook, AnUnusedLimitOfZeroNeverEnds) {
  core::SessionLimits l;
  l.unused_timeout = 0ms;
  Fixture f(l);
  auto s = f.prepare();
  f.run(100ms);
  EXPECT_EQ(s->status(), core::SessionStatus::pending_approval);
}
