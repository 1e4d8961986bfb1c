// core::Subscriber's direct writer: a backend's text, deferred for the length of one read, is written
// at the read's end without waking the reader's coroutine; everything else wakes it as before.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/subscriber.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;
using What = core::Subscriber::Next::What;

namespace {

core::Event text(core::EventKind kind, std::string t) {
  core::Event e{kind};
  e.text = std::move(t);
  return e;
}

// The reader's coroutine: what each wake-up gave, and when (ms from its start).
struct Reader {
  std::vector<std::pair<What, long>> got;
  std::vector<core::Event> events;
  asio::awaitable<void> run(core::Subscriber& sub, std::chrono::milliseconds idle_after, int waits) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < waits; ++i) {
      auto n = co_await sub.next(idle_after);
      const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
      got.emplace_back(n.what, static_cast<long>(ms.count()));
      if (n.what == What::event) events.push_back(std::move(n.event));
      if (n.what == What::end) co_return;
    }
  }
};

// A direct writer over a string: takes the text events it finds, and says what it was told to.
struct Direct {
  std::string written;
  int calls = 0;
  bool can_write = true;  // false: the socket has a write in flight (nothing taken)
  bool takes_all = true;  // false: the socket takes only part (the rest waits for a flush)
  std::function<bool()> bind(core::Subscriber& sub) {
    return [this, &sub] {
      ++calls;
      if (!can_write) return false;
      while (auto e = sub.take_text()) written += e->text;
      return takes_all;
    };
  }
};

// A subscriber whose reader has parked (waiting in next()), with the direct writer installed or not.
struct Parked {
  asio::io_context ioc;
  core::Subscriber sub{ioc.get_executor()};
  Direct d;
  Reader r;
  explicit Parked(int waits, std::chrono::milliseconds idle_after = 10s, bool direct = true) {
    if (direct) sub.set_direct(d.bind(sub));
    asio::co_spawn(ioc, r.run(sub, idle_after, waits), asio::detached);
    ioc.poll();
  }
};

}  // namespace

TEST(SubscriberDirect, TheTextOfOneReadIsWrittenOnceAtItsEndAndTheReaderStaysParked) {
  Parked p(1);
  auto& [ioc, sub, d, r] = p;
  sub.push(text(core::EventKind::chunk, "a"), true);
  sub.push(text(core::EventKind::chunk, "b"), true);
  sub.push(text(core::EventKind::thought, "c"), true);
  ioc.poll();
  EXPECT_EQ(d.calls, 0);  // nothing before the read's end
  EXPECT_TRUE(r.got.empty());
  sub.deliver();
  EXPECT_EQ(d.calls, 1);  // one write for the whole read, in order
  EXPECT_EQ(d.written, "abc");
  ioc.poll();
  EXPECT_TRUE(r.got.empty());  // never woken
  sub.deliver();               // nothing deferred since: no call
  EXPECT_EQ(d.calls, 1);
}

TEST(SubscriberDirect, EveryOtherEventAndTextNotDeferredWakeTheReaderAsBefore) {
  Parked p(3);
  auto& [ioc, sub, d, r] = p;
  core::Event call{core::EventKind::tool_call};
  call.details = std::make_shared<const core::EventDetails>(core::EventDetails{.tool_call = {.id = "t1"}});
  sub.push(call, true);  // not text: the reader writes it
  ioc.poll();
  sub.push(text(core::EventKind::chunk, "x"));  // text outside a read: as before
  ioc.poll();
  sub.push(text(core::EventKind::log, "l"), true);  // a log line is not a token
  ioc.poll();
  sub.deliver();
  EXPECT_EQ(d.calls, 0);
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].kind, core::EventKind::tool_call);
  EXPECT_EQ(r.events[1].text, "x");
  EXPECT_EQ(r.events[2].kind, core::EventKind::log);
}

TEST(SubscriberDirect, ABusyWriterLeavesTheTextForTheReader) {
  Parked p(1);
  auto& [ioc, sub, d, r] = p;
  d.can_write = false;
  sub.push(text(core::EventKind::chunk, "a"), true);
  sub.push(text(core::EventKind::chunk, "b"), true);
  sub.deliver();
  EXPECT_EQ(d.calls, 1);
  ioc.poll();
  ASSERT_EQ(r.events.size(), 1u);  // woken with the queued text (merged), nothing lost
  EXPECT_EQ(r.events[0].text, "ab");
}

TEST(SubscriberDirect, ASocketThatTookPartWakesTheReaderToFlush) {
  Parked p(2);
  auto& [ioc, sub, d, r] = p;
  d.takes_all = false;
  sub.push(text(core::EventKind::chunk, "a"), true);
  sub.deliver();
  ioc.poll();
  ASSERT_EQ(r.got.size(), 1u);
  EXPECT_EQ(r.got[0].first, What::flush);  // nothing new, the rest of the write to send
  // While the rest waits, text is queued for the reader's next write: it goes out after the rest.
  d.can_write = false;
  sub.push(text(core::EventKind::chunk, "b"), true);
  sub.deliver();
  ioc.poll();
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].text, "b");
  EXPECT_EQ(d.written, "a");
}

TEST(SubscriberDirect, AnEndAfterDirectWritesEndsTheReader) {
  Parked p(3);
  auto& [ioc, sub, d, r] = p;
  sub.push(text(core::EventKind::chunk, "a"), true);
  sub.deliver();
  sub.push(core::Event{core::EventKind::completed}, true);  // final: never written directly
  ioc.poll();
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].kind, core::EventKind::completed);
  EXPECT_EQ(r.got.back().first, What::end);
  EXPECT_EQ(d.written, "a");
}

TEST(SubscriberDirect, DirectWritesCountAsActivityForTheKeepAlive) {
  // Tokens written directly every 10 ms for 200 ms, the keep-alive period 80 ms: no keep-alive while
  // they come (the reader is never woken), then one a whole period after the last.
  Parked p(1, 80ms);
  auto& [ioc, sub, d, r] = p;
  long last_ms = 0;
  asio::co_spawn(
      ioc,
      [&]() -> asio::awaitable<void> {
        const auto t0 = std::chrono::steady_clock::now();
        asio::steady_timer t(ioc);
        for (int i = 0; i < 20; ++i) {
          t.expires_after(10ms);
          co_await t.async_wait(asio::use_awaitable);
          sub.push(text(core::EventKind::chunk, "t"), true);
          sub.deliver();
        }
        last_ms = static_cast<long>(
            std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0).count());
      },
      asio::detached);
  ioc.run_for(2s);
  EXPECT_EQ(d.written, std::string(20, 't'));
  ASSERT_EQ(r.got.size(), 1u);
  EXPECT_EQ(r.got[0].first, What::idle);
  EXPECT_GE(r.got[0].second - last_ms, 80);
}

TEST(SubscriberDirect, WithoutADirectWriterDeferredTextWakesTheReader) {
  Parked p(1, 10s, false);
  auto& [ioc, sub, d, r] = p;
  sub.push(text(core::EventKind::chunk, "a"), true);
  ioc.poll();
  ASSERT_EQ(r.events.size(), 1u);
  EXPECT_EQ(r.events[0].text, "a");
}
