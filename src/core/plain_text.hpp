// Text from a peer we don't trust (an agent's stderr, a line that wasn't JSON, a model server's
// error page) shown to a person: valid UTF-8 whatever the bytes were, and cut without splitting a
// character. Event streams are UTF-8; raw bytes would reach a page as mojibake or a decoder error.
#pragma once
#include <cstddef>
#include <string>
#include <string_view>

namespace leuria::core {

// The length of the valid UTF-8 sequence at s[i] (1-4), or 0 when the bytes there aren't one
// (overlong forms, surrogates and code points past U+10FFFF count as invalid, as in RFC 3629).
inline std::size_t utf8_sequence_length(std::string_view s, std::size_t i) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) return 1;
  std::size_t n = c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
  if (n == 0 || i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((b(k) & 0xC0) != 0x80) return 0;
  if (c == 0xE0 && b(1) < 0xA0) return 0;  // overlong
  if (c == 0xED && b(1) > 0x9F) return 0;  // a surrogate
  if (c == 0xF0 && b(1) < 0x90) return 0;  // overlong
  if (c == 0xF4 && b(1) > 0x8F) return 0;  // past U+10FFFF
  return n;
}

// Whether every byte of `s` belongs to a valid UTF-8 sequence.
inline bool is_utf8(std::string_view s) {
  for (std::size_t i = 0, n = 0; i < s.size(); i += n)
    if ((n = utf8_sequence_length(s, i)) == 0) return false;
  return true;
}

// At most `max_bytes` of `s` (whole characters only), each invalid byte replaced with U+FFFD.
inline std::string valid_utf8(std::string_view s, std::size_t max_bytes = std::string::npos) {
  std::string out;
  for (std::size_t i = 0; i < s.size();) {
    const std::size_t n = utf8_sequence_length(s, i);
    const std::string_view piece = n ? s.substr(i, n) : std::string_view("\xEF\xBF\xBD");
    if (out.size() + piece.size() > max_bytes) break;
    out += piece;
    i += n ? n : 1;
  }
  return out;
}

// What would change how a name, or the sentence around it, reads: bidi controls ("Shop" U+202E
// "gnp.exe" reads "Shopexe.png"), controls (a terminal's ESC sequences too) and line separators,
// and characters that hide text. Zero-width joiners stay: emoji and several scripts need them.
inline bool must_mark(char32_t c) {
  return c < 0x20 || (c >= 0x7F && c <= 0x9F) ||                        // C0, DEL, C1
         c == 0x061C || c == 0x200E || c == 0x200F ||                     // bidi marks
         (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||  // bidi embeddings, isolates
         c == 0x2028 || c == 0x2029 ||                                    // line and paragraph separators
         c == 0x200B || (c >= 0x2060 && c <= 0x2064) || c == 0xFEFF ||    // invisible
         (c >= 0xE0000 && c <= 0xE007F);                                  // tags
}

// The code point of the valid sequence of length n (from utf8_sequence_length) at s[i].
inline char32_t decode_utf8(std::string_view s, std::size_t i, std::size_t n) {
  const auto b = [&](std::size_t k) { return static_cast<char32_t>(static_cast<unsigned char>(s[i + k])); };
  if (n == 1) return b(0);
  if (n == 2) return ((b(0) & 0x1F) << 6) | (b(1) & 0x3F);
  if (n == 3) return ((b(0) & 0x0F) << 12) | ((b(1) & 0x3F) << 6) | (b(2) & 0x3F);
  return ((b(0) & 0x07) << 18) | ((b(1) & 0x3F) << 12) | ((b(2) & 0x3F) << 6) | (b(3) & 0x3F);
}

// A name a site chose, made safe to show a person (a page or a terminal): invalid bytes become
// U+FFFD and every character must_mark() names is shown as "[U+XXXX]", so it is seen, not obeyed.
inline std::string marked_text(std::string_view text) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    const std::size_t n = utf8_sequence_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    const char32_t c = decode_utf8(text, i, n);
    if (must_mark(c)) {
      std::string hex;
      for (char32_t v = c; v != 0 || hex.size() < 4; v >>= 4) hex.insert(hex.begin(), kHex[v & 0xF]);
      out += "[U+" + hex + "]";
    } else {
      out += text.substr(i, n);
    }
    i += n;
  }
  return out;
}

}  // namespace leuria::core
