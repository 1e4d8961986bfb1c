// Mutations for the differential tests (a fast reader against the tree reading it must agree with):
// one to three edits of a seed text, each a deletion, an inserted or replaced character from
// `alphabet`, or an inserted word from `words`. The caller's generator has a fixed seed, so a
// failure is reproducible.
#pragma once
#include <random>
#include <string>
#include <vector>

namespace leuria::mutation {

inline std::string mutate(std::string s, std::mt19937& rng, const std::string& alphabet,
                          const std::vector<std::string>& words) {
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int e = 0; e < edits && !s.empty(); ++e) {
    const std::size_t at = rng() % s.size();
    switch (rng() % 4) {
      case 0: s.erase(at, 1 + rng() % 3); break;
      case 1: s.insert(at, 1, alphabet[rng() % alphabet.size()]); break;
      case 2: s[at] = alphabet[rng() % alphabet.size()]; break;
      default: s.insert(at, words[rng() % words.size()]); break;
    }
  }
  return s;
}

// A JSON string's body (what goes between its quotes) of up to `max_pieces` pieces: characters and
// escapes scan() takes, and, unless `valid_only`, pieces it refuses or that end the string early
// (quotes, raw control characters, bad escapes, ill-formed and cut UTF-8 sequences).
inline std::string string_body(std::mt19937& rng, bool valid_only, int max_pieces = 6) {
  static const std::vector<std::string> valid = {
      "a", "Z", " ", "T1764;", "\\n", "\\\"", "\\\\", "\\/", "\\b", "\\f", "\\r", "\\t", "\x7f", "\xc2\x80", "\xc3\xa9",
      "\xdf\xbf", "\xe0\xa0\x80", "\xe2\x82\xac", "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x90\x80\x80",
      "\xf0\x9f\x98\x80", "\xf3\xbf\xbf\xbf", "\xf4\x8f\xbf\xbf", "\\u00e9", "\\ud83d\\ude00"};
  static const std::vector<std::string> invalid = {
      "\"", "\\", "\\x", "\\u12", "\\ud800", "\\udc00x", "\x01", "\x1f", "\t", "\n", std::string(1, '\0'), "\x80", "\xbf",
      "\xc0\xaf", "\xc1\xbf", "\xc3", "\xe0\x80\xaf", "\xe0\x9f\xbf", "\xe2\x82", "\xed\xa0\x80", "\xed\xbf\xbf",
      "\xf0\x8f\xbf\xbf", "\xf0\x9f\x98", "\xf4\x90\x80\x80", "\xf5\x80\x80\x80", "\xff", "\xfe"};
  std::string out;
  const int n = static_cast<int>(rng() % (max_pieces + 1));
  for (int i = 0; i < n; ++i) {
    const bool bad = !valid_only && rng() % 4 == 0;
    const auto& from = bad ? invalid : valid;
    out += from[rng() % from.size()];
  }
  return out;
}

}  // namespace leuria::mutation
