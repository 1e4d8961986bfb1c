// Messages: the checks a request's head passes before Beast's parser, the gate and the router see
// it. Each refuses a shape that two readers of the same bytes (a proxy, a browser, this server)
// could frame differently, which is how requests are smuggled. No Beast here.
#pragma once
#include <cstddef>
#include <string_view>
#include <vector>

#include "http/message.hpp"

namespace leuria::http {

// Where the head (request line and header fields) ends in the bytes received so far.
struct HeadScan {
  enum class Result { need_more, complete, malformed };
  Result result = Result::need_more;
  std::size_t end = 0;  // complete: the offset just past the empty line that ends the head
};

// Scans `bytes` from `pos`, which it advances so that a head arriving in pieces is read once
// (start a new request with pos = 0). Malformed: a CR not followed by LF, a LF not preceded by CR,
// or a line that starts with a space or tab (obs-fold, which Beast would join to the line above).
HeadScan scan_head(std::string_view bytes, std::size_t& pos);

struct HeadRefusal {
  unsigned status = 0;       // 0: the head is fine
  std::string_view reason;   // for the log
};

// The parsed head's framing: at most `max_fields` fields (else 431); then, else 400: at most one
// Content-Length, only digits and below 2^63; at most one Transfer-Encoding, exactly `chunked`,
// only in HTTP/1.1 and never with a Content-Length.
HeadRefusal check_head(unsigned version, const std::vector<Header>& headers, std::size_t max_fields);

}  // namespace leuria::http
