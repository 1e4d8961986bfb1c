// Messages: the characters of an HTTP token (RFC 9110 tchar), as a table. A search of the punctuation
// for each character was a library call per character, about 70 a request (callgrind, bench scenario 5).
#pragma once
#include <string_view>

namespace leuria::http {

struct TokenChars {
  bool ok[256] = {};
  constexpr TokenChars() {
    for (int c = 'a'; c <= 'z'; ++c) ok[c] = true;
    for (int c = 'A'; c <= 'Z'; ++c) ok[c] = true;
    for (int c = '0'; c <= '9'; ++c) ok[c] = true;
    for (const char c : std::string_view("!#$%&'*+-.^_`|~")) ok[static_cast<unsigned char>(c)] = true;
  }
};
inline constexpr TokenChars kTokenChars;

inline bool is_token_char(char c) { return kTokenChars.ok[static_cast<unsigned char>(c)]; }

}  // namespace leuria::http
