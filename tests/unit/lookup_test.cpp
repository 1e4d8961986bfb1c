// transport::Lookup: host names looked up off the io thread and answered through a descriptor, on an
// io_context that runs without locks, as the engine's does.
#include "transport/lookup.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <chrono>
#include <netdb.h>
#include <optional>
#include <thread>

namespace asio = boost::asio;
using leuria::transport::Lookup;
using Found = boost::system::result<asio::ip::tcp::resolver::results_type, std::string>;

namespace {

// A resolver that answers after 400 ms (a DNS server that is slow or gone).
int slow_resolve(const char* host, const char* port, const addrinfo* hints, addrinfo** out) {
  std::this_thread::sleep_for(std::chrono::milliseconds(400));
  return ::getaddrinfo(host, port, hints, out);
}

// Runs one lookup to its end; `cancel_at_once` cancels it right after it starts waiting.
Found look_up(std::string host, std::string port, bool cancel_at_once = false, Lookup::Resolve resolve = nullptr,
              std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  asio::io_context ioc(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
  Lookup lookup(ioc.get_executor(), resolve);
  std::optional<Found> out;
  asio::co_spawn(ioc, lookup.run(std::move(host), std::move(port), deadline),
                 [&out](std::exception_ptr, Found f) { out = std::move(f); });
  // Handlers run in order: the lookup starts and waits, then this cancels the wait.
  if (cancel_at_once) asio::post(ioc, [&lookup] { lookup.cancel(); });
  ioc.run();
  return *out;
}

TEST(Lookup, FindsLocalhost) {
  Found f = look_up("localhost", "8080");
  ASSERT_TRUE(f) << f.error();
  bool loopback = false;
  for (const auto& e : *f) {
    EXPECT_EQ(e.endpoint().port(), 8080);
    loopback = loopback || e.endpoint().address().is_loopback();
  }
  EXPECT_TRUE(loopback);
}

TEST(Lookup, SaysWhyNothingWasFound) {
  Found f = look_up("localhost", "no-such-service-name");
  ASSERT_FALSE(f);
  EXPECT_FALSE(f.error().empty());
  EXPECT_NE(f.error(), "Stopped");
}

TEST(Lookup, ACancelledLookupStopsAndItsThreadFinishesAlone) {
  Found f = look_up("localhost", "80", true);
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error(), "Stopped");
  // The cancelled lookup's thread still holds its share; a new lookup still works beside it.
  EXPECT_TRUE(look_up("localhost", "81"));
}

TEST(Lookup, AResolverThatDoesNotAnswerInTimeIsLeftWithASentence) {
  // The sentence says the deadline came before the answer (an answer that came first is taken).
  Found f = look_up("localhost", "80", false, slow_resolve, std::chrono::milliseconds(50));
  ASSERT_FALSE(f);
  EXPECT_EQ(f.error(), "No answer within 50 ms");
  Found g = look_up("localhost", "80", false, slow_resolve, std::chrono::seconds(2));
  EXPECT_TRUE(g) << "a slow answer within the deadline is taken";
  // The late lookup's thread finishes alone; lookups go on beside it.
  EXPECT_TRUE(look_up("localhost", "81"));
}

}  // namespace
