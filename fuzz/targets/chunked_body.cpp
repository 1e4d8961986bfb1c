// Fuzz target: a model server's chunked response body (http/body_decoder.cpp, BodyDecoder), decoded in
// place as http/client.cpp feeds it. Input: the first byte picks the read sizes, the rest is the body.
//
// Checks (differential, against Beast's parser: tests/unit/body_reference.hpp): a body Beast reads
// whole is read whole, with the same bytes, in any pieces; a body Beast refuses is refused, unless it
// differs only in a trailer field (dropped here, checked as a message header there); what comes
// before a refusal is what Beast read before its own; and the same pieces, one byte at a time, read
// the same.
#include "../../tests/unit/body_reference.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::size_t step = 1 + data[0] % 32;
  const std::string_view body(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<std::size_t> pieces(body.size() / step + 1, step);

  const auto theirs = oracle::beast_read_chunked(body);
  const auto ours = oracle::decoder_read(http::BodyDecoder::chunked(), body, pieces);
  const auto bytewise = oracle::decoder_read(http::BodyDecoder::chunked(), body, std::vector<std::size_t>(body.size(), 1));
  check(ours.ok == bytewise.ok && ours.data == bytewise.data, "the decoder reads differently in other pieces");
  if (theirs.ok) {
    check(ours.ok, "the decoder refused a body Beast reads");
    check(ours.data == theirs.data, "the decoder read other bytes than Beast");
  } else if (ours.ok) {
    check(ours.last_chunk, "the decoder accepted a body Beast refuses before its trailer");
    check(ours.data == theirs.data, "the decoder read other bytes than Beast");
  } else {
    check(ours.data == theirs.data, "the decoder read other bytes than Beast before refusing");
  }
  return 0;
}
