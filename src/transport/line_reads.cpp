#include "transport/line_reads.hpp"

#include <cstring>

namespace leuria::transport {

LineReader::LineReader(boost::asio::posix::stream_descriptor& fd, const OnLine& on_line,
                       const std::function<void()>* after_lines, const std::function<bool()>* must_wait,
                       std::size_t max_line)
    : fd(fd),
      on_line_(on_line),
      after_lines_(after_lines),
      must_wait_(must_wait),
      max_line_(max_line),
      buffer_(std::make_unique_for_overwrite<char[]>(kChunk)) {}

void LineReader::deliver(std::string_view line) const {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (on_line_) on_line_(line);
}

void LineReader::make_room() {
  if (size_ - tail_ >= kChunk / 4) return;
  std::memmove(buffer_.get(), buffer_.get() + head_, tail_ - head_);
  tail_ -= head_;
  head_ = 0;
  if (size_ - tail_ < kChunk / 4) {
    auto bigger = std::make_unique_for_overwrite<char[]>(size_ * 2);
    std::memcpy(bigger.get(), buffer_.get(), tail_);
    buffer_ = std::move(bigger);
    size_ *= 2;
  }
}

LinesNext LineReader::take(std::size_t n) {
  // Only the new bytes can hold a newline: rescanning the whole line on every read made a long line
  // cost quadratic time.
  const char* data = buffer_.get();
  for (auto* nl = static_cast<const char*>(std::memchr(data + tail_, '\n', n)); nl;
       nl = static_cast<const char*>(std::memchr(data + head_, '\n', tail_ + n - head_))) {
    const auto end = static_cast<std::size_t>(nl - data);
    deliver(std::string_view(data + head_, end - head_));
    head_ = end + 1;
  }
  if (head_ > tail_ && after_lines_ && *after_lines_) (*after_lines_)();
  tail_ += n;
  if (head_ == tail_) {
    head_ = tail_ = 0;
    if (size_ > kChunk) {  // a long line is done with: give its memory back
      buffer_ = std::make_unique_for_overwrite<char[]>(kChunk);
      size_ = kChunk;
    }
  }
  if (tail_ - head_ > max_line_) {
    head_ = tail_ = 0;
    return LinesNext::too_long;
  }
  return must_wait() ? LinesNext::wait_for_room : LinesNext::read;
}

void LineReader::take_rest() {
  if (tail_ == head_) return;
  const std::string_view rest(buffer_.get() + head_, tail_ - head_);
  head_ = tail_ = 0;
  deliver(rest);
  if (after_lines_ && *after_lines_) (*after_lines_)();
}

}  // namespace leuria::transport
