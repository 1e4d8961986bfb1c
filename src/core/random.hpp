// Secrets: CSPRNG ids and tokens, SHA-256, constant-time comparison, nonce syntax.
#pragma once
#include <cstddef>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct evp_md_st;
struct evp_md_ctx_st;

namespace leuria::core {

// `bytes` random bytes from OpenSSL's CSPRNG, base64url without padding. Aborts if the CSPRNG fails:
// an engine that cannot make secrets must not hand out guessable ones.
std::string random_base64url(std::size_t bytes);

// Several such values from one draw: `sizes[i]` random bytes each, in order. A draw costs OpenSSL about
// 7,000 instructions whatever its length (finding its generator, setting up the cipher), so values made
// together (a session's id and secret, a page channel's id, token and salt) are drawn together.
std::vector<std::string> random_base64url(std::initializer_list<std::size_t> sizes);

std::string base64url(std::string_view bytes);
// Standard base64 (RFC 4648 section 4) with padding.
std::string base64(std::string_view bytes);
// Decodes standard or url-safe base64, padded or not; nullopt when it isn't base64.
std::optional<std::string> base64_decode(std::string_view text);

// Lower-case hex SHA-256 of the text, once (a fresh Sha256, below).
std::string sha256_hex(std::string_view text);

// The same, for a caller that hashes on every request (the grant book: each page request's token).
// OpenSSL 3 looks SHA-256 up by name on every EVP_Digest(EVP_sha256()) call, through a lock, its name
// map and its method store: about 7,000 instructions for a 43-character token, 3,600 with the algorithm
// fetched once, of which the hash is 2,000 (callgrind, bench scenario 5). This fetches it once and keeps
// one context, on first use. One owner, one thread.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  // Aborts if OpenSSL has no SHA-256: the build is broken, and tokens could not be checked.
  std::string hex(std::string_view text);

 private:
  evp_md_st* md_ = nullptr;
  evp_md_ctx_st* ctx_ = nullptr;
};

// Compares in time that depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// ^[A-Za-z0-9_-]{22,128}$
bool valid_nonce(std::string_view nonce);

inline constexpr std::size_t kRequestIdBytes = 18;
inline constexpr std::size_t kTokenBytes = 32;

}  // namespace leuria::core
