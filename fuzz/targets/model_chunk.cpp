// Fuzz target: a model server's streamed line (adapters/llm/codec.cpp parse_stream_line), read
// without a tree by jsonio::scan. Input: the bytes after "data: ".
//
// Checks (differential): the line reads exactly as the tree-building reference reads it
// (tests/unit/chunk_reference.hpp): the same text, reasoning, finish reason, error and tool-call
// parts, or nothing for both; and jsonio::scan accepts exactly what jsonio::read accepts, with the
// same sentence when it refuses. And through a slot (jsonio::StringSlot) learned from a server's
// chunk, as llm_backend.cpp reads a stream: the input as the next chunk's text, as the next line,
// and as the chunk's `created` (an integer the slot may let change), read as the reference reads them.
#include <boost/json.hpp>

#include "../../tests/unit/chunk_reference.hpp"
#include "json/scan.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;

namespace {
struct Nothing {
  void begin(const jsonio::Path&, bool) {}
  void end(const jsonio::Path&, bool, std::size_t) {}
  bool wants_string(const jsonio::Path&) { return true; }  // every string copied: exercises the parts
  void string(const jsonio::Path&, std::string) {}
  void integer(const jsonio::Path&, std::int64_t) {}
  void other(const jsonio::Path&) {}
};
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Nothing n;
  auto scanned = jsonio::scan(text, n);
  auto read = jsonio::read(text);
  check(scanned.has_value() == read.has_value(), "scan and read disagree on whether the text is JSON");
  if (!scanned) check(scanned.error().message == read.error().message, "scan and read refuse with different words");

  const std::string line = "data: " + std::string(text);
  check(oracle::describe(llm::parse_stream_line(line)) == oracle::describe(oracle::reference_parse_stream_line(line)),
        "the chunk reader and the tree reading disagree");

  // Slots learned from a server's chunk: one without a `created`, and two whose `created` (ignored,
  // so another integer may be written there) lies before the text (OpenAI's order) or after it
  // (llama.cpp's). The input is read as the next chunk's text, as the next line, and in the place
  // of `created`. In each shape `@` marks `created` and `$` the text.
  static const std::string shapes[] = {
      R"(data: {"id":"c","choices":[{"index":0,"delta":{"content":"$"},"finish_reason":null}]})",
      R"(data: {"id":"c","created":@,"choices":[{"index":0,"delta":{"content":"$"},"finish_reason":null}]})",
      R"(data: {"choices":[{"index":0,"delta":{"content":"$"}}],"created":@,"id":"c"})",
  };
  for (const std::string& shape : shapes) {
    auto chunk = [&](std::string_view created, std::string_view content) {
      std::string out;
      for (const char c : shape) {
        if (c == '@') out += created;
        else if (c == '$') out += content;
        else out += c;
      }
      return out;
    };
    jsonio::StringSlot slot;
    llm::parse_stream_line(chunk("1764000000", "first"), &slot);
    check(slot.ready(), "a plain text chunk was not learned");
    for (const std::string& next : {chunk("1764000000", text), line, chunk(text, "next"), chunk("1764000001", "next")})
      check(oracle::describe(llm::parse_stream_line(next, &slot)) == oracle::describe(oracle::reference_parse_stream_line(next)),
            "a line read through the slot reads otherwise");
  }
  return 0;
}
