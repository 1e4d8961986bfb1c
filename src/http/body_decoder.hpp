// Messages: a response body's framing (a length, HTTP/1.1 chunks, or the connection's close), decoded
// where the bytes lie. The client parses a response's head with Beast and its body here: Beast's
// parser spent about 440 instructions unframing each chunk of a model's stream (one token) and copied
// its bytes into a buffer of its own; this spends about 240 and moves nothing when a read brings one
// chunk (callgrind, a paced turn: docs/PERFORMANCE.md, "a token's body, unframed where it lies").
//
// decode() takes the bytes a read brought (after any it left undone before) and moves the body's
// bytes among them to their front, in order, never ahead of where they lay, so nothing is copied
// elsewhere. What it leaves undone (an unfinished size line, a chunk's CRLF, a trailer) stays for the
// next call with more bytes after it.
//
// Accepts what RFC 9112 allows and Beast accepts: a chunk size of hex digits with chunk extensions
// (tokens and quoted strings, checked, then ignored), CRLF line ends, and trailer fields after the
// last chunk (checked, then dropped). Refuses, with Beast's error codes so that a caller's sentence
// reads as before: a size that is not hex or overflows, a chunk not followed by CRLF, a bad line end,
// a bad extension or trailer field, and a size line or trailer longer than the limits below (the
// body's peer must not make us keep an endless line).
#pragma once
#include <boost/system/error_code.hpp>
#include <cstddef>
#include <cstdint>

namespace leuria::http {

// The longest chunk size line, extensions included, and the longest trailer (all its fields).
inline constexpr std::size_t kMaxChunkLine = 4096;
inline constexpr std::size_t kMaxTrailer = 8192;

class BodyDecoder {
 public:
  static BodyDecoder none() { return BodyDecoder(Framing::none, 0); }
  static BodyDecoder length(std::uint64_t n) { return BodyDecoder(n == 0 ? Framing::none : Framing::length, n); }
  static BodyDecoder chunked() { return BodyDecoder(Framing::chunked, 0); }
  static BodyDecoder to_close() { return BodyDecoder(Framing::to_close, 0); }
  BodyDecoder() = default;  // no body

  struct Decoded {
    std::size_t used = 0;  // input bytes done with; the rest, unfinished framing, comes again with more
    std::size_t body = 0;  // body bytes, now at the input's front
  };
  // Decodes `n` bytes at `p`. On an error, `body` still counts the bytes before the fault (they
  // arrived whole) and every later call fails alike. Bytes after the body's end are left unused.
  Decoded decode(char* p, std::size_t n, boost::system::error_code& ec);
  // The connection closed: true when that ends the body (a body read to the close, or one already
  // whole), false when it cut the body short.
  bool end_of_input();
  bool done() const { return state_ == State::done; }
  // The last chunk came: what follows (or followed) is the trailer, whose fields are dropped.
  bool last_chunk_seen() const { return last_chunk_; }

 private:
  enum class Framing { none, length, chunked, to_close };
  enum class State { length, size_line, data, data_crlf, trailer, to_close, done, failed };
  BodyDecoder(Framing f, std::uint64_t n);
  // One whole line at p + in (n bytes in all): `in` advanced past it. False when it is not all there yet,
  // or is bad (ec).
  bool size_line(char* p, std::size_t n, std::size_t& in, boost::system::error_code& ec);
  bool trailer(const char* p, std::size_t n, std::size_t& in, boost::system::error_code& ec);

  State state_ = State::done;
  std::uint64_t left_ = 0;          // of the body's length, or of the current chunk
  std::size_t trailer_bytes_ = 0;   // of the trailer so far
  bool last_chunk_ = false;
  boost::system::error_code fault_; // what failed it, told again on every later call
};

}  // namespace leuria::http
