#include "http/request_head.hpp"

#include <cstdint>
#include <cstring>
#include <limits>

namespace leuria::http {

HeadScan scan_head(std::string_view bytes, std::size_t& pos) {
  using R = HeadScan::Result;
  const char* const data = bytes.data();
  const std::size_t size = bytes.size();
  while (pos < size) {
    // Line by line: the next CR and the next LF, each found by memchr (a byte-by-byte loop was
    // 6% of a kept-alive tool call's instructions, bench scenario 4). An LF before the CR is a
    // bare one: every LF of a CRLF is stepped over below.
    const std::size_t left = size - pos;
    const auto* cr = static_cast<const char*>(std::memchr(data + pos, '\r', left));
    const auto* lf = static_cast<const char*>(std::memchr(data + pos, '\n', cr ? static_cast<std::size_t>(cr - (data + pos)) : left));
    if (lf) return {R::malformed};
    if (!cr) {
      pos = size;
      return {R::need_more};
    }
    pos = static_cast<std::size_t>(cr - data);
    // pos stays on the CR until what follows it has arrived.
    if (pos + 1 >= size) return {R::need_more};
    if (data[pos + 1] != '\n') return {R::malformed};
    if (pos + 2 >= size) return {R::need_more};
    const char next = data[pos + 2];
    if (next == ' ' || next == '\t') return {R::malformed};
    if (next == '\r') {
      if (pos + 3 >= size) return {R::need_more};
      if (data[pos + 3] != '\n') return {R::malformed};
      return {R::complete, pos + 4};
    }
    pos += 2;  // past the CRLF
  }
  return {R::need_more};
}

namespace {

// 1*DIGIT below 2^63: no sign, no spaces, no list, no hex (Beast itself takes "5, 5" and up to 2^64).
bool valid_length(std::string_view v) {
  if (v.empty() || v.size() > 19) return false;
  std::uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') return false;
    n = n * 10 + static_cast<std::uint64_t>(c - '0');
  }
  return n <= static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max());
}

}  // namespace

HeadRefusal check_head(unsigned version, const std::vector<Header>& headers, std::size_t max_fields) {
  if (headers.size() > max_fields) return {431, "too many header fields"};
  const Header* length = nullptr;
  const Header* coding = nullptr;
  for (auto& h : headers) {
    if (iequals(h.name, "content-length")) {
      if (length) return {400, "two Content-Length fields"};
      length = &h;
    } else if (iequals(h.name, "transfer-encoding")) {
      if (coding) return {400, "two Transfer-Encoding fields"};
      coding = &h;
    }
  }
  if (coding) {
    if (length) return {400, "Content-Length with Transfer-Encoding"};
    if (version < 11) return {400, "Transfer-Encoding in HTTP/1.0"};
    // Anything else (gzip, "chunked, identity", a typo) is a coding we don't decode: its body's end
    // would be guessed.
    if (!iequals(coding->value, "chunked")) return {400, "a Transfer-Encoding other than chunked"};
  }
  if (length && !valid_length(length->value)) return {400, "a malformed Content-Length"};
  return {};
}

}  // namespace leuria::http
