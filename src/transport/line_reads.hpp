// Bytes → lines: the reads of one pipe (a child's stdout or stderr, transport/child_process.cpp) as one
// Asio operation. Its plain handler reads, splits the bytes into lines and hands them over, read after
// read, until the pipe ends, the owner asks to wait, a line grows past its limit or a handler throws;
// only then is the coroutine that awaits it resumed. With a co_await per read, every read (an agent that
// streams writes a line per token, and each comes in a read of its own) also made, pushed and popped a
// coroutine frame and resumed the reader through Asio's pump: the layer that the model's body reads
// shed the same way (http/client.cpp BodyReads, bench scenarios 2 and 7).
#pragma once
#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <exception>
#include <functional>
#include <memory>
#include <string_view>

namespace leuria::transport {

// Why a run of reads stopped (and, inside the operation, that another read is due).
enum class LinesNext {
  read,           // another read is due (never the outcome of a run)
  wait_for_room,  // must_wait said so: await the owner's room, then run the reads again
  ended,          // the pipe ended, or its read failed (`ec` says which)
  too_long,       // a line passed the limit without its end; what was buffered of it is dropped
  threw,          // a handler threw: `thrown`, for the awaiting coroutine to rethrow
};

// One pipe's lines: its buffer and what the reads hand over to. Lives in the frame of the coroutine that
// awaits read_lines_until_stop, so it outlives every read; the functions it points to outlive it.
class LineReader {
 public:
  using OnLine = std::function<void(std::string_view)>;
  // on_line: each line without its "\n" or "\r\n", seen only during the call. after_lines (may be
  // null): after the lines one read gave, when it gave any. must_wait (may be null: never wait): asked
  // before each read; an empty function means always. max_line: the longest line kept.
  LineReader(boost::asio::posix::stream_descriptor& fd, const OnLine& on_line,
             const std::function<void()>* after_lines, const std::function<bool()>* must_wait,
             std::size_t max_line);

  // Whether the owner's room must be awaited before the next read.
  bool must_wait() const { return must_wait_ && (!*must_wait_ || (*must_wait_)()); }
  // Makes room for the next read: moves an unended line to the front, grows only for a long one.
  void make_room();
  // Hands over the lines that `n` new bytes ended, then says what comes next (read, wait, too_long).
  LinesNext take(std::size_t n);
  // After the pipe ended: its last line, if the child did not end it.
  void take_rest();

  boost::asio::posix::stream_descriptor& fd;
  LinesNext next = LinesNext::read;
  boost::system::error_code ec;  // why the pipe ended
  std::exception_ptr thrown;

  char* space() { return buffer_.get() + tail_; }
  std::size_t space_size() const { return size_ - tail_; }

 private:
  void deliver(std::string_view line) const;

  static constexpr std::size_t kChunk = 64 * 1024;
  const OnLine& on_line_;
  const std::function<void()>* after_lines_;
  const std::function<bool()>* must_wait_;
  std::size_t max_line_;
  // Read into directly: the bytes of [head_, tail_) are a line not yet ended, handed over as views into
  // it (no copy, no allocation per line). Not zeroed: a reader that never gets a byte (most agents'
  // stderr) leaves its pages untouched.
  std::unique_ptr<char[]> buffer_;
  std::size_t size_ = kChunk, head_ = 0, tail_ = 0;
};

// The operation: reads and hands over until `r.next` is not `read`. What a handler throws is caught
// here and kept in `r.thrown` (thrown out of io_context::run() it would take the engine down).
struct LineReads {
  LineReader* r;

  template <class Self>
  void operator()(Self& self) {
    read(self);
  }
  template <class Self>
  void operator()(Self& self, boost::system::error_code ec, std::size_t n) {
    try {
      if (ec) {
        r->ec = ec;
        r->next = LinesNext::ended;
      } else {
        r->next = r->take(n);
        if (r->next == LinesNext::read) r->make_room();
      }
    } catch (...) {
      r->thrown = std::current_exception();
      r->next = LinesNext::threw;
    }
    if (r->next != LinesNext::read) return self.complete();
    read(self);
  }

 private:
  template <class Self>
  void read(Self& self) {
    r->fd.async_read_some(boost::asio::buffer(r->space(), r->space_size()), std::move(self));
  }
};

// Runs the reads until they stop (r.next says why). Room for the first read is made here, in the awaiting
// coroutine, where what the allocation throws belongs; the handler makes it for the reads after.
inline auto read_lines_until_stop(LineReader& r) {
  r.make_room();
  return boost::asio::async_compose<const boost::asio::use_awaitable_t<>&, void()>(LineReads{&r},
                                                                                   boost::asio::use_awaitable);
}

}  // namespace leuria::transport
