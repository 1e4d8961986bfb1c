#include "json/string_slot.hpp"

#include <array>
#include <cstring>
#include <functional>

#include "core/plain_text.hpp"

namespace leuria::jsonio {

namespace {

// The bytes a string holds as they are: printable ASCII but the quote and the backslash.
constexpr auto kPlain = [] {
  std::array<bool, 256> t{};
  for (int c = 0x20; c < 0x80; ++c) t[c] = c != '"' && c != '\\';
  return t;
}();

bool is_digit(char c) { return static_cast<unsigned char>(c - '0') <= 9; }

// The length of the integer written at text[pos]: `0`, or a digit from 1 to 9 and up to 17 more
// (below 10^18: an int64, as scan() read the one learned); 0 when none is. A digit after it is left
// to the caller's comparison with the remembered byte after the number, which is not a digit.
std::size_t integer_length(std::string_view text, std::size_t pos) {
  const char* const p = text.data() + pos;
  const char* const end = text.data() + text.size();
  if (p >= end || !is_digit(*p)) return 0;
  if (*p == '0') return 1;
  const char* q = p + 1;
  const char* const most = end - p > 18 ? p + 18 : end;
  while (q < most && is_digit(*q)) ++q;
  return q < end && is_digit(*q) ? 0 : static_cast<std::size_t>(q - p);  // 19 digits or more: scan() reads it
}

// Where a string whose body starts at text[pos] ends: its first quote not escaped, or npos.
std::size_t closing_quote(std::string_view text, std::size_t pos) {
  while (pos < text.size() && text[pos] != '"') pos += text[pos] == '\\' ? 2 : 1;
  return pos < text.size() ? pos : std::string_view::npos;
}

}  // namespace

bool decode_string_body(std::string_view body, std::string& out) {
  const auto* const begin = reinterpret_cast<const unsigned char*>(body.data());
  const auto* const end = begin + body.size();
  const auto* p = begin;
  const auto* run = p;  // the start of the bytes copied as they are
  auto flush = [&](const unsigned char* to) { out.append(reinterpret_cast<const char*>(run), to - run); };
  while (p < end) {
    if (kPlain[*p]) {  // most of a token: one load and one test a byte
      ++p;
      continue;
    }
    const unsigned char c = *p;
    if (c >= 0x80) {  // a whole, well-formed sequence, by the rule read() checks UTF-8 with
      const std::size_t n = core::utf8_sequence_length(body, static_cast<std::size_t>(p - begin));
      if (n == 0) return false;
      p += n;
    } else if (c == '\\') {
      if (end - p < 2) return false;
      char e;
      switch (p[1]) {
        case '"': e = '"'; break;
        case '\\': e = '\\'; break;
        case '/': e = '/'; break;
        case 'b': e = '\b'; break;
        case 'f': e = '\f'; break;
        case 'n': e = '\n'; break;
        case 'r': e = '\r'; break;
        case 't': e = '\t'; break;
        default: return false;  // \u (scan() reads it, pairs and all) or not an escape
      }
      flush(p);
      out.push_back(e);
      p += 2;
      run = p;
    } else {
      return false;  // a quote would end the string early; a raw control character is refused
    }
  }
  flush(end);
  return true;
}

bool StringSlot::learn(std::string_view text, const char* at, std::string_view value, std::string_view ignored) {
  // Addresses compared with std::less: `at` may point into the parser's own copy, another object
  // (gone by now: only its address is compared, never read).
  const std::less<const char*> before;
  const char* t = text.data();
  if (at == nullptr || t == nullptr || before(at, t + 1) || before(t + text.size(), at)) return false;
  const std::size_t off = static_cast<std::size_t>(at - t);
  if (t[off - 1] != '"') return false;
  // The string's end: its first quote not escaped, as the parser found it (a valid string's escapes
  // are a backslash and one character, or \u and four hex digits, never a quote).
  const std::size_t end = closing_quote(text, off);
  if (end == std::string_view::npos) return false;
  // Read again as match() reads: the string must be the value scan() gave (so this is the string
  // scan() read there), and written so that match() takes it (no \u escape).
  std::string read;
  if (!decode_string_body(text.substr(off, end - off), read) || read != value) return false;
  before_.assign(t, off);
  after_.assign(t + end, text.size() - end);
  // The ignored integer: a whole token in the text, written as match() reads one. The parser handed
  // it over as it lies; a byte before or after it that could belong to a number would make it part
  // of a longer token, and is refused to be sure.
  number_ = Number::none;
  const char* n = ignored.data();
  if (!ignored.empty() && !before(n, t) && !before(t + text.size(), n + ignored.size())) {
    const std::size_t pos = static_cast<std::size_t>(n - t);
    auto part_of_a_number = [&](std::size_t i) {
      return i < text.size() && (is_digit(text[i]) || std::strchr("+-.eE", text[i]) != nullptr);
    };
    const bool whole = integer_length(text, pos) == ignored.size() && pos > 0 && !part_of_a_number(pos - 1) &&
                       !part_of_a_number(pos + ignored.size());
    if (whole && pos + ignored.size() < off) {
      number_ = Number::before;
      number_at_ = static_cast<std::uint32_t>(pos);
    } else if (whole && pos > end) {
      number_ = Number::after;
      number_at_ = static_cast<std::uint32_t>(pos - end);
    }
    if (number_ != Number::none) number_len_ = static_cast<std::uint32_t>(ignored.size());
  }
  ready_ = true;
  return true;
}

bool StringSlot::match_around_number(std::string_view text, std::size_t& pos, const std::string& piece,
                                     std::size_t& length) const {
  // piece = head, the remembered integer, tail; text from pos = head, an integer, tail.
  const std::size_t head = number_at_;
  const std::size_t tail = piece.size() - head - number_len_;
  if (text.size() - pos < head || std::memcmp(text.data() + pos, piece.data(), head) != 0) return false;
  const std::size_t n = integer_length(text, pos + head);
  if (n == 0 || text.size() - pos - head - n < tail) return false;
  if (std::memcmp(text.data() + pos + head + n, piece.data() + head + number_len_, tail) != 0) return false;
  pos += head + n + tail;
  length = n;
  return true;
}

bool StringSlot::match(std::string_view text, std::string& value) {
  if (!ready_) return false;
  // Each side is first compared whole, as remembered: the ignored integer changes once in many
  // lines, and then it is remembered as it now reads (below), so the next line compares whole too.
  std::size_t b = before_.size();  // where the string's body starts
  std::size_t moved = 0;           // the new integer's length, when it moved
  if (text.size() < b || std::memcmp(text.data(), before_.data(), b) != 0) {
    if (number_ != Number::before) return false;
    b = 0;
    if (!match_around_number(text, b, before_, moved)) return false;
  }
  std::size_t e;  // where it ends (its closing quote)
  const std::size_t a = after_.size();
  if (text.size() >= b + a && std::memcmp(text.data() + text.size() - a, after_.data(), a) == 0) {
    e = text.size() - a;
  } else {
    if (number_ != Number::after) return false;
    // The integer's length is not known from the end, so the string's end is found from its start.
    e = closing_quote(text, b);
    if (e == std::string_view::npos) return false;
    std::size_t pos = e;
    if (!match_around_number(text, pos, after_, moved) || pos != text.size()) return false;
  }
  value.clear();
  if (!decode_string_body(text.substr(b, e - b), value)) return false;
  if (moved) {
    std::string& piece = number_ == Number::before ? before_ : after_;
    const std::size_t at = (number_ == Number::before ? 0 : e) + number_at_;
    piece.replace(number_at_, number_len_, text.data() + at, moved);
    number_len_ = static_cast<std::uint32_t>(moved);
  }
  return true;
}

}  // namespace leuria::jsonio
