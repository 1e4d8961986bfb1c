// Messages: the characters of HTTP's grammar, shared by the server's, the client's and the body
// decoder's readers: a token's characters (RFC 9110 tchar), as a table (a search of the punctuation for
// each character was a library call per character, about 70 a request: callgrind, bench scenario 5),
// and a hex digit's value (a chunk's size, a percent escape).
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

// A hex digit's value, or -1.
inline int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace leuria::http
