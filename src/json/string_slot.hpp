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
  bool learn(std::string_view text, const char* at, std::string_view value);
  void forget() { ready_ = false; }
  bool ready() const { return ready_; }

  // When `text` is the remembered text with only the slot's string written differently, puts that
  // string's value in `value` (replacing what it held) and returns true. Otherwise returns false
  // and `value` is unspecified: the caller reads the text whole.
  bool match(std::string_view text, std::string& value) const;

 private:
  std::string before_;  // up to and including the slot's opening quote
  std::string after_;   // from the slot's closing quote to the end
  bool ready_ = false;
};

// The value of a JSON string's body (the bytes between its quotes) when scan() would take it as
// one string: no quote or backslash unescaped, no raw control character, valid UTF-8, and only
// the one-character escapes (a \u escape answers false, for scan() to read). Appends to `out`.
bool decode_string_body(std::string_view body, std::string& out);

}  // namespace leuria::jsonio
