#pragma once
// jsonio::StringSlot: a JSON text remembered whole but for one string value in it (the slot), so
// that the next text differing from it only there is read without a parse. A stream repeats itself:
// a model server's chunks, and an agent's text updates, are the same bytes token after token but
// for the token's text, and reading each whole (jsonio::scan) was about half of what a streamed
// token cost the engine (bench scenario 2, callgrind).
//
// Why it reads as scan() would. The remembered text was read whole and accepted, and the slot is
// one string token in it. A new text that is the remembered bytes before the token, then one valid
// string token, then the remembered bytes after it, is tokenised alike up to the slot, the slot is
// one string whatever it holds, and the rest is tokenised alike after it. So the new text has the
// same structure, the same keys, depth, numbers and ending; only the slot's value differs, and
// match() refuses any string scan() would (a raw control character, an unknown escape, invalid
// UTF-8). A \u escape is left to scan() (match() says no), so surrogate pairs have one reader.
// Unit tests hold match() to scan() over mutations of the string and of the text around it.
//
// One number may change too, when the caller says it does not read it: a server's chunks carry a
// `created` time in whole seconds, so at 10 tokens a second a stream's every tenth line differed
// from the one before in that number and was read whole again (bench scenario 7: a tenth of the
// engine's instructions). The remembered text is then kept in three pieces around the number as
// well; a new text with another integer written there (digits only, no sign, fraction or exponent,
// at most 18 of them, so scan() reads it as an int64 as it did) tokenises alike but for that
// number's value, which the caller has said it ignores.
#include <cstdint>
#include <string>
#include <string_view>

namespace leuria::jsonio {

class StringSlot {
 public:
  // `text` was read whole by scan() and accepted, `value` is the one string the caller reads from
  // it, and `at` where scan() said that string begins (a ScanHandler visitor's `kept_at`).
  // Remembers the text around the string when `at` lies in `text` (it does unless the string begins
  // with an escape: then it is the parser's copy) and the string written there reads as `value`
  // without a \u escape. Returns whether it did; when not, what was remembered before is kept.
  // `ignored`, when not empty, is an integer token in `text` (as the parser handed it over) before
  // or after the string whose value the caller does not read: match() then takes another integer
  // there. One that is not such a token (a sign, a fraction, not in the text) is not ignored.
  bool learn(std::string_view text, const char* at, std::string_view value, std::string_view ignored = {});
  void forget() { ready_ = false; }
  bool ready() const { return ready_; }

  // When `text` is the remembered text with only the slot's string (and the ignored integer)
  // written differently, puts that string's value in `value` (replacing what it held) and returns
  // true; an ignored integer that moved is remembered as `text` writes it. Otherwise returns false
  // and `value` is unspecified: the caller reads the text whole.
  bool match(std::string_view text, std::string& value);

 private:
  enum class Number : unsigned char { none, before, after };  // where the ignored integer lies

  // Whether `text` holds `piece` from `pos` on with an integer in place of the remembered one at
  // piece[number_at_, number_at_ + number_len_); moves `pos` past it, and gives that integer's length.
  bool match_around_number(std::string_view text, std::size_t& pos, const std::string& piece, std::size_t& length) const;

  std::string before_;  // up to and including the slot's opening quote
  std::string after_;   // from the slot's closing quote to the end
  Number number_ = Number::none;
  std::uint32_t number_at_ = 0;   // the ignored integer's offset in before_ or after_
  std::uint32_t number_len_ = 0;
  bool ready_ = false;
};

// The value of a JSON string's body (the bytes between its quotes) when scan() would take it as
// one string: no quote or backslash unescaped, no raw control character, valid UTF-8, and only
// the one-character escapes (a \u escape answers false, for scan() to read). Appends to `out`.
bool decode_string_body(std::string_view body, std::string& out);

}  // namespace leuria::jsonio
