// transport::Lookup: host names looked up off the io thread and answered through a descriptor, on an
// io_context that runs without locks, as the engine's does.
#include "transport/lookup.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <optional>

namespace asio = boost::asio;
using leuria::transport::Lookup;
using Found = boost::system::result<asio::ip::tcp::resolver::results_type, std::string>;

namespace {

// Runs one lookup to its end; `cancel_at_once` cancels it right after it starts waiting.
Found look_up(std::string host, std::string port, bool cancel_at_once = false) {
  asio::io_context ioc(BOOST_ASIO_CONCURRENCY_HINT_UNSAFE);
  Lookup lookup(ioc.get_executor());
  std::optional<Found> out;
  asio::co_spawn(ioc, lookup.run(std::move(host), std::move(port)),
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

}  // namespace
