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

bool StringSlot::learn(std::string_view text, const char* at, std::string_view value) {
  // Addresses compared with std::less: `at` may point into the parser's own copy, another object
  // (gone by now: only its address is compared, never read).
  const std::less<const char*> before;
  const char* t = text.data();
  if (at == nullptr || t == nullptr || before(at, t + 1) || before(t + text.size(), at)) return false;
  const std::size_t off = static_cast<std::size_t>(at - t);
  if (t[off - 1] != '"') return false;
  // The string's end: its first quote not escaped, as the parser found it (a valid string's escapes
  // are a backslash and one character, or \u and four hex digits, never a quote).
  std::size_t end = off;
  while (end < text.size() && t[end] != '"') end += t[end] == '\\' ? 2 : 1;
  if (end >= text.size()) return false;
  // Read again as match() reads: the string must be the value scan() gave (so this is the string
  // scan() read there), and written so that match() takes it (no \u escape).
  std::string read;
  if (!decode_string_body(text.substr(off, end - off), read) || read != value) return false;
  before_.assign(t, off);
  after_.assign(t + end, text.size() - end);
  ready_ = true;
  return true;
}

bool StringSlot::match(std::string_view text, std::string& value) const {
  if (!ready_) return false;
  const std::size_t b = before_.size();
  const std::size_t a = after_.size();
  if (text.size() < b + a) return false;
  if (std::memcmp(text.data(), before_.data(), b) != 0) return false;
  if (std::memcmp(text.data() + text.size() - a, after_.data(), a) != 0) return false;
  value.clear();
  return decode_string_body(text.substr(b, text.size() - b - a), value);
}

}  // namespace leuria::jsonio
