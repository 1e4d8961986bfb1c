// Secrets: CSPRNG ids and tokens, SHA-256, constant-time comparison, nonce syntax.
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace leuria::core {

// `bytes` random bytes from OpenSSL's CSPRNG, base64url without padding. Aborts if the CSPRNG fails:
// an engine that cannot make secrets must not hand out guessable ones.
std::string random_base64url(std::size_t bytes);

std::string base64url(std::string_view bytes);
// Standard base64 (RFC 4648 section 4) with padding.
std::string base64(std::string_view bytes);
// Decodes standard or url-safe base64, padded or not; nullopt when it isn't base64.
std::optional<std::string> base64_decode(std::string_view text);

// Lower-case hex SHA-256 of the text.
std::string sha256_hex(std::string_view text);

// Compares in time that depends only on the lengths.
bool constant_time_equal(std::string_view a, std::string_view b);

// ^[A-Za-z0-9_-]{22,128}$
bool valid_nonce(std::string_view nonce);

inline constexpr std::size_t kRequestIdBytes = 18;
inline constexpr std::size_t kTokenBytes = 32;

}  // namespace leuria::core
