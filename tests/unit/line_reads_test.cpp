// transport::LineReader and its reads as one operation (read_lines_until_stop): the run reads and hands
// lines over until the pipe ends, the owner's must_wait says wait, a line grows past its limit or a
// handler throws, and each of those comes back to the awaiting coroutine, never out of io_context::run().
// Lines across reads, CRLF and long lines through a real child: misbehaving_peers_test.cpp (ChildLines).
#include "transport/line_reads.hpp"

#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <chrono>
#include <fcntl.h>
#include <stdexcept>
#include <string>
#include <unistd.h>
#include <vector>

namespace asio = boost::asio;
using leuria::transport::LineReader;
using leuria::transport::LinesNext;

namespace {

// A pipe whose read end is an Asio descriptor on an io_context without locks, as the engine's is.
struct Pipe {
  asio::io_context ioc{BOOST_ASIO_CONCURRENCY_HINT_UNSAFE};
  asio::posix::stream_descriptor reader{ioc};
  int writer = -1;
  Pipe() {
    int fds[2];
    EXPECT_EQ(::pipe2(fds, O_CLOEXEC), 0);
    reader.assign(fds[0]);
    writer = fds[1];
  }
  ~Pipe() { close_writer(); }
  void write(const std::string& s) const { EXPECT_EQ(::write(writer, s.data(), s.size()), static_cast<ssize_t>(s.size())); }
  void close_writer() {
    if (writer >= 0) ::close(writer);
    writer = -1;
  }
  // One run of the reads, awaited by a coroutine as child_process.cpp's read_lines does.
  void run(LineReader& r, bool& done) {
    asio::co_spawn(
        ioc,
        [&]() -> asio::awaitable<void> {
          co_await leuria::transport::read_lines_until_stop(r);
          done = true;
        },
        asio::detached);
    ioc.run_for(std::chrono::seconds(5));
  }
};

}  // namespace

TEST(LineReads, MustWaitIsAskedAfterEachReadAndOnlyItsYesStopsTheRun) {
  Pipe p;
  std::vector<std::string> lines;
  const LineReader::OnLine on_line = [&](std::string_view l) { lines.emplace_back(l); };
  int asked = 0, after = 0;
  const std::function<void()> after_lines = [&] { ++after; };
  // Each answer of no lets the next line come, so each read holds one line.
  const std::function<bool()> must_wait = [&] {
    if (++asked < 3) {
      p.write(std::to_string(asked + 1) + "\r\n");
      return false;
    }
    return true;
  };
  LineReader r(p.reader, on_line, &after_lines, &must_wait, 1024);
  p.write("1\n");
  bool done = false;
  p.run(r, done);
  ASSERT_TRUE(done);
  EXPECT_EQ(r.next, LinesNext::wait_for_room);
  EXPECT_EQ(lines, (std::vector<std::string>{"1", "2", "3"}));
  EXPECT_EQ(asked, 3);
  EXPECT_EQ(after, 3);  // once per read that ended lines
}

TEST(LineReads, AnEmptyMustWaitMeansAlwaysAndNoneMeansNever) {
  Pipe p;
  const LineReader::OnLine on_line = [](std::string_view) {};
  const std::function<bool()> empty;
  EXPECT_TRUE(LineReader(p.reader, on_line, nullptr, &empty, 1024).must_wait());
  EXPECT_FALSE(LineReader(p.reader, on_line, nullptr, nullptr, 1024).must_wait());
}

TEST(LineReads, TheEndStopsTheRunAndTheLastLineNeedsNoNewline) {
  Pipe p;
  std::vector<std::string> lines;
  const LineReader::OnLine on_line = [&](std::string_view l) { lines.emplace_back(l); };
  int after = 0;
  const std::function<void()> after_lines = [&] { ++after; };
  LineReader r(p.reader, on_line, &after_lines, nullptr, 1024);
  p.write("a\nb\n\nlast");
  p.close_writer();
  bool done = false;
  p.run(r, done);
  ASSERT_TRUE(done);
  EXPECT_EQ(r.next, LinesNext::ended);
  EXPECT_EQ(r.ec, asio::error::eof);
  EXPECT_EQ(lines, (std::vector<std::string>{"a", "b", ""}));
  r.take_rest();
  EXPECT_EQ(lines.back(), "last");
  EXPECT_GE(after, 2);  // the read's lines, then the last line's
  r.take_rest();        // nothing is handed over twice
  EXPECT_EQ(lines.size(), 4u);
}

TEST(LineReads, ALineOverTheLimitStopsTheRunAndIsDropped) {
  Pipe p;
  std::vector<std::string> lines;
  const LineReader::OnLine on_line = [&](std::string_view l) { lines.emplace_back(l); };
  LineReader r(p.reader, on_line, nullptr, nullptr, 100);
  p.write("short\n" + std::string(101, 'x'));
  bool done = false;
  p.run(r, done);
  ASSERT_TRUE(done);
  EXPECT_EQ(r.next, LinesNext::too_long);
  EXPECT_EQ(lines, (std::vector<std::string>{"short"}));
  r.take_rest();
  EXPECT_EQ(lines.size(), 1u);
}

TEST(LineReads, WhatAHandlerThrowsComesBackToTheCoroutineNotOutOfRun) {
  Pipe p;
  std::vector<std::string> lines;
  const LineReader::OnLine on_line = [&](std::string_view l) {
    if (l == "boom") throw std::runtime_error("the handler broke");
    lines.emplace_back(l);
  };
  LineReader r(p.reader, on_line, nullptr, nullptr, 1024);
  p.write("ok\nboom\nnever\n");
  bool done = false;
  EXPECT_NO_THROW(p.run(r, done));
  ASSERT_TRUE(done);
  ASSERT_EQ(r.next, LinesNext::threw);
  EXPECT_EQ(lines, (std::vector<std::string>{"ok"}));
  EXPECT_THROW(std::rethrow_exception(r.thrown), std::runtime_error);
}
