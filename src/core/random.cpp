#include "core/random.hpp"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

namespace leuria::core {

std::string base64url(std::string_view bytes) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  // Sized once and written in place: a push per character was most of a token's cost here.
  std::string out((bytes.size() * 4 + 2) / 3, '\0');
  char* o = out.data();
  std::size_t i = 0;
  auto byte = [&](std::size_t k) { return static_cast<unsigned char>(bytes[k]); };
  for (; i + 3 <= bytes.size(); i += 3) {
    unsigned v = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
    *o++ = kAlphabet[v & 63];
  }
  if (bytes.size() - i == 1) {
    unsigned v = byte(i) << 16;
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
  } else if (bytes.size() - i == 2) {
    unsigned v = (byte(i) << 16) | (byte(i + 1) << 8);
    *o++ = kAlphabet[(v >> 18) & 63];
    *o++ = kAlphabet[(v >> 12) & 63];
    *o++ = kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::string base64(std::string_view bytes) {
  std::string out = base64url(bytes);
  for (char& c : out) {
    if (c == '-') c = '+';
    if (c == '_') c = '/';
  }
  while (out.size() % 4 != 0) out += '=';
  return out;
}

std::optional<std::string> base64_decode(std::string_view text) {
  while (!text.empty() && text.back() == '=') text.remove_suffix(1);
  std::string out;
  unsigned buffer = 0;
  int bits = 0;
  for (char c : text) {
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+' || c == '-') v = 62;
    else if (c == '/' || c == '_') v = 63;
    else return std::nullopt;
    buffer = (buffer << 6) | static_cast<unsigned>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buffer >> bits) & 0xFF));
    }
  }
  if (bits >= 6) return std::nullopt;  // a dangling sextet: not base64
  return out;
}

namespace {

[[noreturn]] void fatal(const char* what) {
  std::fputs(what, stderr);
  std::abort();
}

void random_bytes(unsigned char* out, std::size_t n) {
  if (n > 0 && RAND_bytes(out, static_cast<int>(n)) != 1) fatal("leuria: the system's random number generator failed\n");
}

std::string hex(const unsigned char* digest, unsigned len) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(std::size_t{len} * 2, '\0');
  for (unsigned i = 0; i < len; ++i) {
    out[2 * i] = kHex[digest[i] >> 4];
    out[2 * i + 1] = kHex[digest[i] & 15];
  }
  return out;
}

}  // namespace

std::string random_base64url(std::size_t n) {
  std::vector<unsigned char> buf(n);
  random_bytes(buf.data(), n);
  return base64url(std::string_view(reinterpret_cast<const char*>(buf.data()), n));
}

std::vector<std::string> random_base64url(std::initializer_list<std::size_t> sizes) {
  std::size_t total = 0;
  for (std::size_t n : sizes) total += n;
  std::vector<unsigned char> buf(total);
  random_bytes(buf.data(), total);
  std::vector<std::string> out;
  out.reserve(sizes.size());
  const char* at = reinterpret_cast<const char*>(buf.data());
  for (std::size_t n : sizes) {
    out.push_back(base64url(std::string_view(at, n)));
    at += n;
  }
  return out;
}

std::string sha256_hex(std::string_view text) { return Sha256().hex(text); }

Sha256::Sha256() = default;

Sha256::~Sha256() {
  EVP_MD_CTX_free(ctx_);
  EVP_MD_free(md_);
}

std::string Sha256::hex(std::string_view text) {
  if (!md_) {
    // On first use, not at start: the fetch builds OpenSSL's table of digests, about 2 MB of an idle
    // engine's RSS (bench scenario 8) that an engine no page has used yet does not need.
    md_ = EVP_MD_fetch(nullptr, "SHA2-256", nullptr);
    ctx_ = EVP_MD_CTX_new();
    if (!md_ || !ctx_) fatal("leuria: OpenSSL has no SHA-256\n");
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_DigestInit_ex2(ctx_, md_, nullptr) != 1 || EVP_DigestUpdate(ctx_, text.data(), text.size()) != 1 ||
      EVP_DigestFinal_ex(ctx_, digest, &len) != 1)
    fatal("leuria: SHA-256 failed\n");
  return core::hex(digest, len);
}

bool constant_time_equal(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  return CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

bool valid_nonce(std::string_view n) {
  if (n.size() < 22 || n.size() > 128) return false;
  for (char c : n) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' ||
              c == '-';
    if (!ok) return false;
  }
  return true;
}

}  // namespace leuria::core
