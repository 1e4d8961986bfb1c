#include "http/body_decoder.hpp"

#include "http/chars.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>
#include <cstring>
#include <string_view>

namespace leuria::http {

namespace bhttp = boost::beast::http;

namespace {

bool is_blank(char c) { return c == ' ' || c == '\t'; }

// chunk-ext = *( BWS ";" BWS name [ BWS "=" BWS ( token / quoted-string ) ] ), the whole of `s`.
// As Beast reads it: blanks after a name only before ";" or "=", none after a value but before ";",
// and a quoted string's backslash escapes any one character.
bool valid_extensions(std::string_view s) {
  std::size_t i = 0;
  const std::size_t n = s.size();
  auto skip_blanks = [&] {
    while (i < n && is_blank(s[i])) ++i;
  };
  auto token = [&] {
    const std::size_t start = i;
    while (i < n && is_token_char(s[i])) ++i;
    return i > start;
  };
  while (i < n) {
    skip_blanks();
    if (i == n || s[i] != ';') return false;
    for (;;) {  // after a ';'
      ++i;
      skip_blanks();
      if (!token()) return false;
      const std::size_t name_end = i;
      skip_blanks();
      if (i == n) return i == name_end;  // blanks after a name end nothing
      if (s[i] == ';') continue;
      if (s[i] != '=') return false;
      ++i;
      skip_blanks();
      if (i < n && s[i] == '"') {
        for (++i;; ++i) {
          if (i >= n) return false;
          if (s[i] == '"') break;
          if (s[i] == '\\') ++i;
        }
        ++i;
      } else if (!token()) {
        return false;
      }
      break;
    }
  }
  return true;
}

// A trailer field line without its CRLF: name ":" then visible characters, blanks and obs-text; a
// line that begins with a blank continues the field before it (obs-fold).
bool valid_trailer_line(std::string_view line, bool after_field) {
  std::size_t i = 0;
  if (is_blank(line[0])) {
    if (!after_field) return false;
  } else {
    while (i < line.size() && is_token_char(line[i])) ++i;
    if (i == 0 || i == line.size() || line[i] != ':') return false;
    ++i;
  }
  for (; i < line.size(); ++i) {
    const auto c = static_cast<unsigned char>(line[i]);
    if ((c < 0x20 && c != '\t') || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

BodyDecoder::BodyDecoder(Framing f, std::uint64_t n) : left_(n) {
  switch (f) {
    case Framing::none: state_ = State::done; break;
    case Framing::length: state_ = State::length; break;
    case Framing::chunked: state_ = State::size_line; break;
    case Framing::to_close: state_ = State::to_close; break;
  }
}

BodyDecoder::Decoded BodyDecoder::decode(char* p, std::size_t n, boost::system::error_code& ec) {
  ec = {};
  std::size_t in = 0, out = 0;
  // Body bytes go to the front, after those before them: `out` never passes `in`.
  auto take = [&](std::size_t k) {
    if (out != in) std::memmove(p + out, p + in, k);
    out += k;
    in += k;
  };
  while (in < n) {
    switch (state_) {
      case State::done:
        return {in, out};
      case State::failed:
        ec = fault_;
        return {in, out};
      case State::to_close:
        take(n - in);
        break;
      case State::length:
      case State::data: {
        const std::size_t k = static_cast<std::size_t>(std::min<std::uint64_t>(left_, n - in));
        take(k);
        left_ -= k;
        if (left_ == 0) state_ = state_ == State::length ? State::done : State::data_crlf;
        break;
      }
      case State::data_crlf:
        if (p[in] != '\r' || (n - in >= 2 && p[in + 1] != '\n')) {
          fault_ = bhttp::error::bad_chunk;
          state_ = State::failed;
          break;
        }
        if (n - in < 2) return {in, out};
        in += 2;
        state_ = State::size_line;
        break;
      case State::size_line:
      case State::trailer:
        // A whole line, or (false) one not all there yet, or a bad one (ec).
        if (!(state_ == State::size_line ? size_line(p, n, in, ec) : trailer(p, n, in, ec))) {
          if (ec) {
            fault_ = ec;
            state_ = State::failed;
          }
          return {in, out};
        }
        break;
    }
  }
  if (state_ == State::failed) ec = fault_;
  return {in, out};
}

// A whole size line at p + in: the chunk's size and extensions, checked. False when the line is
// not all there yet (or is bad: ec).
bool BodyDecoder::size_line(char* p, std::size_t n, std::size_t& in, boost::system::error_code& ec) {
  const char* start = p + in;
  const std::size_t avail = n - in;
  // The line ends at its first CR, which must come with its LF, as Beast reads it: a bare LF is one
  // more character of the line (refused by the extensions' grammar, but inside a quoted value).
  const auto* cr = static_cast<const char*>(std::memchr(start, '\r', std::min(avail, kMaxChunkLine)));
  if (!cr) {
    if (avail >= kMaxChunkLine) ec = bhttp::error::header_limit;
    return false;
  }
  const auto length = static_cast<std::size_t>(cr - start);
  if (length + 1 == avail) return false;  // its LF has not come yet
  if (cr[1] != '\n') {
    ec = bhttp::error::bad_line_ending;
    return false;
  }
  const std::string_view line(start, length);
  std::uint64_t size = 0;
  std::size_t i = 0;
  for (int v; i < line.size() && (v = hex_digit(line[i])) >= 0; ++i) {
    if (size > (~std::uint64_t{0} >> 4)) {
      ec = bhttp::error::bad_chunk;
      return false;
    }
    size = size << 4 | static_cast<std::uint64_t>(v);
  }
  if (i == 0) {
    ec = bhttp::error::bad_chunk;
    return false;
  }
  if (i < line.size() && !valid_extensions(line.substr(i))) {
    ec = bhttp::error::bad_chunk_extension;
    return false;
  }
  in += line.size() + 2;
  left_ = size;
  last_chunk_ = size == 0;
  state_ = size == 0 ? State::trailer : State::data;
  return true;
}

// One trailer line at p + in: a field, or the empty line that ends the body. False when the line is
// not all there yet (or is bad: ec).
bool BodyDecoder::trailer(const char* p, std::size_t n, std::size_t& in, boost::system::error_code& ec) {
  const char* start = p + in;
  const std::size_t room = kMaxTrailer - trailer_bytes_;
  const std::size_t avail = n - in;
  const auto* lf = static_cast<const char*>(std::memchr(start, '\n', std::min(avail, room)));
  if (!lf) {
    if (avail >= room) ec = bhttp::error::header_limit;
    return false;
  }
  std::string_view line(start, static_cast<std::size_t>(lf - start));
  if (line.empty() || line.back() != '\r') {
    ec = bhttp::error::bad_line_ending;
    return false;
  }
  line.remove_suffix(1);
  if (!line.empty() && !valid_trailer_line(line, trailer_bytes_ > 0)) {
    ec = bhttp::error::bad_field;
    return false;
  }
  in += line.size() + 2;
  trailer_bytes_ += line.size() + 2;
  if (line.empty()) state_ = State::done;
  return true;
}

bool BodyDecoder::end_of_input() {
  if (state_ == State::to_close) state_ = State::done;
  return state_ == State::done;
}

}  // namespace leuria::http
