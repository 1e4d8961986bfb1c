// transport::async_read_drained: after a read that the kernel says left nothing, the next read waits for
// the socket's next readiness instead of trying first, and no byte and no end is ever left waiting for an
// event that will not come.
#include "transport/drained_read.hpp"

#include <gtest/gtest.h>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <chrono>
#include <poll.h>
#include <string>

namespace asio = boost::asio;
using asio::ip::tcp;
using leuria::transport::async_read_drained;
using leuria::transport::DrainedBuffer;

namespace {

// A connected pair on loopback, on an io_context that runs without locks, as the engine's does.
struct Pair {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  tcp::socket reader{ioc};
  tcp::socket writer{ioc};
  // Keeps run/poll from stopping the io_context between reads.
  asio::executor_work_guard<asio::io_context::executor_type> work{ioc.get_executor()};
  explicit Pair(bool counted = true) {
    tcp::acceptor acceptor(ioc, tcp::endpoint(asio::ip::address_v4::loopback(), 0));
    writer.connect(acceptor.local_endpoint());
    acceptor.accept(reader);
    if (counted) {
      EXPECT_TRUE(leuria::transport::count_what_remains(reader));
    }
  }
  // Waits until the reader's kernel has what was sent (loopback may hand delivery to a softirq
  // thread); with `end`, the writer's FIN too.
  void settle(bool end = false) {
    pollfd fd{reader.native_handle(), static_cast<short>(end ? POLLRDHUP : POLLIN), 0};
    ASSERT_EQ(::poll(&fd, 1, 5000), 1);
  }
  void send(const std::string& bytes) { asio::write(writer, asio::buffer(bytes)); }
};

// Reads once into a buffer of `room` bytes; the text read, or "error: …".
struct OneRead {
  std::string got;
  bool done = false;
};
void start_read(Pair& p, OneRead& out, std::size_t room) {
  asio::co_spawn(
      p.ioc,
      [&p, &out, room]() -> asio::awaitable<void> {
        std::string space(room, '\0');
        auto [ec, n] = co_await async_read_drained(p.reader, asio::buffer(space), asio::as_tuple(asio::use_awaitable));
        out.got = ec ? "error: " + ec.message() : space.substr(0, n);
        out.done = true;
      },
      asio::detached);
}

// Runs until the read is done; the bound only stops a broken build from hanging the suite.
void finish(Pair& p, OneRead& r) {
  for (int i = 0; i < 500 && !r.done; ++i) p.ioc.run_one_for(std::chrono::milliseconds(10));
}

// One read, started and run to its end: what it read ("" if it never ended).
std::string read_once(Pair& p, std::size_t room) {
  OneRead r;
  start_read(p, r, room);
  finish(p, r);
  return r.got;
}

// A read that waits for the reactor's event (started and run until it has to wait).
void start_waiting_read(Pair& p, OneRead& r) {
  start_read(p, r, 64);
  p.ioc.poll();
}

const std::string kEnd = "error: " + asio::error::make_error_code(asio::error::eof).message();

}  // namespace

#if LEURIA_DRAINED_READ_SPECIALIZED
using Op = asio::detail::reactive_socket_recv_op_base<DrainedBuffer>;

// One perform of Asio's read operation on `p.reader`: its status and the bytes it read.
std::pair<Op::status, std::string> perform(Pair& p, std::size_t room) {
  const auto state = asio::detail::socket_ops::stream_oriented | asio::detail::socket_ops::user_set_non_blocking;
  char space[16];
  Op op(boost::system::error_code(), p.reader.native_handle(), state, DrainedBuffer{asio::buffer(space, room)}, 0,
        nullptr);
  const auto status = op.perform();
  return {status, std::string(space, op.bytes_transferred_)};
}

// The rule itself, on the operation Asio runs: exhausted only when the kernel counted nothing left.
TEST(DrainedRead, ExhaustedOnlyWhenTheKernelSaysNothingIsLeft) {
  Pair p;
  p.reader.non_blocking(true);
  EXPECT_EQ(perform(p, 8).first, Op::not_done);  // nothing there yet: Asio waits for the event
  p.send("abcdef");
  p.settle();
  EXPECT_EQ(perform(p, 4), std::make_pair(Op::done, std::string("abcd")));  // two bytes left
  EXPECT_EQ(perform(p, 8), std::make_pair(Op::done_and_exhausted, std::string("ef")));
  // The last bytes with the end behind them: the end counts as one byte left, so the next read tries.
  p.send("gh");
  p.writer.shutdown(tcp::socket::shutdown_send);
  p.settle(true);
  EXPECT_EQ(perform(p, 8), std::make_pair(Op::done, std::string("gh")));
  EXPECT_EQ(perform(p, 8).first, Op::done_and_exhausted);  // the end: 0 bytes, as Asio's says
}

// A socket whose kernel was not asked to count: a short read is Asio's, and the next read tries.
TEST(DrainedRead, WithoutTheCountAShortReadIsNotExhausted) {
  Pair p(false);
  p.reader.non_blocking(true);
  p.send("abc");
  p.settle();
  EXPECT_EQ(perform(p, 8), std::make_pair(Op::done, std::string("abc")));
}
#endif

TEST(DrainedRead, EveryMessageIsReadWhateverWhenItCame) {
  Pair p;
  // Sent before the read starts: the first try finds it.
  p.send("one");
  EXPECT_EQ(read_once(p, 64), "one");

  // After that short read, the next waits without trying; what comes later wakes it.
  OneRead b;
  start_waiting_read(p, b);
  EXPECT_FALSE(b.done);
  p.send("two");
  finish(p, b);
  EXPECT_EQ(b.got, "two");

  // Bytes that came while no read was waiting, their readiness already taken by the reactor (poll
  // runs it with nothing queued): the next read must still find them.
  p.send("three");
  p.settle();
  for (int i = 0; i < 5; ++i) p.ioc.poll();
  EXPECT_EQ(read_once(p, 64), "three");
}

TEST(DrainedRead, AFullReadLeavesTheRestToTheNextReadWithoutAnEvent) {
  Pair p;
  OneRead first;
  start_waiting_read(p, first);
  p.send("abcdefghij");
  finish(p, first);
  EXPECT_EQ(first.got, "abcdefghij");
  p.send("0123456789");
  const std::string a = read_once(p, 4);
  const std::string b = read_once(p, 4);
  const std::string c = read_once(p, 4);
  EXPECT_EQ(a + b + c, "0123456789");
  EXPECT_EQ(c, "89");
}

TEST(DrainedRead, TheEndComesAsAsiosDoes) {
  Pair p;
  OneRead a;
  start_waiting_read(p, a);
  p.writer.close();
  finish(p, a);
  EXPECT_EQ(a.got, kEnd);
}

TEST(DrainedRead, TheEndThatCameWithTheLastBytesIsRead) {
  Pair p;
  OneRead a;
  start_waiting_read(p, a);
  p.send("last");
  p.writer.close();
  p.settle(true);  // the bytes and the FIN are both in the reader's queue before the reactor reports them
  finish(p, a);
  EXPECT_EQ(a.got, "last");
  EXPECT_EQ(read_once(p, 64), kEnd);
}
