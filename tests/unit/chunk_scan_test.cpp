// jsonio::scan (read()'s policy without a tree) and the streamed-chunk reader built on it
// (llm::parse_stream_line): the reader must agree with the tree-building reference, line for line,
// on well-formed chunks, odd ones, and thousands of mutations of both.
#include <gtest/gtest.h>

#include <random>

#include "mutate.hpp"

#include "chunk_reference.hpp"
#include "json/scan.hpp"

using namespace leuria;

namespace {

std::string scan_verdict(std::string_view text) {
  jsonio::KeepNothing n;
  auto r = jsonio::scan(text, n);
  return r ? "ok" : r.error().message;
}

std::string read_verdict(std::string_view text) {
  auto r = jsonio::read(text);
  return r ? "ok" : r.error().message;
}

const std::vector<std::string> kChunks = {
    R"({"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"logprobs":null,"finish_reason":null}]})",
    R"({"choices":[{"delta":{"content":"lo \"q\" \u00e9\ud83d\ude00 \n"},"finish_reason":"stop"}]})",
    R"({"choices":[{"delta":{"reasoning_content":"think","reasoning":"other"}}]})",
    R"({"choices":[{"delta":{"reasoning_content":"","reasoning":"other"}}]})",
    R"({"choices":[{"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"lookup","arguments":"{\"q\":"}}]}}]})",
    R"({"choices":[{"delta":{"tool_calls":[{"index":1,"function":{"arguments":"1}"}},{"index":2,"id":"b"},7,[],{"index":-1},{"index":1.5},{"index":"1"},{"index":128},{"index":127,"function":[]},{"index":18446744073709551615}]}}]})",
    R"({"choices":[{"delta":{"tool_calls":{"index":0}}}]})",
    R"({"choices":[{"delta":"text"}]})",
    R"({"choices":[1,{"delta":{"content":"second"}}]})",
    R"({"choices":[{"delta":{"content":"first"}},{"delta":{"content":"second"}}]})",
    R"({"choices":[]})",
    R"({"choices":{}})",
    R"({"usage":{"prompt_tokens":3}})",
    R"({"error":{"message":"overloaded","type":"x"}})",
    R"({"error":"plain","choices":[{"delta":{"content":"x"}}]})",
    R"({"choices":[{"delta":{"content":"x"}}],"error":null})",
    R"({"error":{"code":500}})",
    R"({"error":{"message":7}})",
    R"({"choices":[{"delta":{"content":7,"reasoning":null},"finish_reason":3}]})",
    R"({"choices":[{"delta":{"con\u0074ent":"escaped key"}}]})",
    R"({"choices":[{"delta":{"content":"a","content":"b"}}]})",
    R"({"a":1,"a":2})",
    R"({"":1,"":2})",
    R"({"":1,"":r})",  // repeated and malformed: refused as malformed, as read() says (found by fuzz/targets/model_chunk)
    R"({"x":{"k":1},"y":{"k":2}})",
    R"({"choices":[{"delta":{"content":"x"}}]} trailing)",
    R"({"choices":[{"delta":{"content":"x"}}]}   )",
    R"({"n":1e400})",
    R"([{"choices":[]}])",
    R"("just a string")",
    R"()",
    R"({"choices":[{"delta":{"content":"bad \xff utf8"}}]})",
    R"({"choices":[{"delta":{"content":"cut)",
    "{\"choices\":[{\"delta\":{\"content\":\"bad \xff byte\"}}]}",
    "{\"choices\":[{\"delta\":{\"content\":\"ok \xc3\xa9\"}}]}",
};

std::string deep(int levels) { return std::string(levels, '[') + std::string(levels, ']'); }

}  // namespace

TEST(JsonScan, AcceptsAndRefusesExactlyWhatReadDoesWithTheSameWords) {
  std::vector<std::string> texts = kChunks;
  texts.push_back(deep(64));
  texts.push_back(deep(65));
  texts.push_back(R"({"k":[)" + deep(62) + "]}");
  texts.push_back(R"({"k":[)" + deep(63) + "]}");
  for (auto& t : texts) EXPECT_EQ(scan_verdict(t), read_verdict(t)) << t.substr(0, 120);
  EXPECT_EQ(scan_verdict(R"({"a":1,"a":2})"), "the key \"a\" appears twice in one object");
  EXPECT_EQ(scan_verdict(R"({"x":{"k":1},"y":{"k":2}})"), "ok");  // the same key in two objects is fine
}

TEST(JsonScan, ThePathNamesWhereEachValueIs) {
  struct Paths : jsonio::KeepNothing {
    std::vector<std::string> seen;
    static std::string show(const jsonio::Path& p) {
      std::string s;
      for (std::size_t i = 0; i < p.depth(); ++i)
        s += p.is_array(i) ? "[" + std::to_string(p.index(i)) + "]" : "." + std::string(p.key(i));
      return s;
    }
    bool wants_string(const jsonio::Path& p) {
      seen.push_back(show(p));
      return true;
    }
    void string(const jsonio::Path&, std::string v) { seen.back() += "=" + v; }
    void integer(const jsonio::Path& p, std::int64_t i) { seen.push_back(show(p) + "=" + std::to_string(i)); }
  } v;
  ASSERT_TRUE(jsonio::scan(R"({"a":[1,{"b":"x","c":[2,3]},"y"],"d":"z"})", v));
  EXPECT_EQ(v.seen, (std::vector<std::string>{".a[0]=1", ".a[1].b=x", ".a[1].c[0]=2", ".a[1].c[1]=3", ".a[2]=y", ".d=z"}));
}

TEST(ChunkScan, AgreesWithTheTreeReadingOnEveryKnownShape) {
  for (auto& c : kChunks) {
    for (std::string prefix : {"data: ", "data:", "data:   "}) {
      const std::string line = prefix + c;
      EXPECT_EQ(oracle::describe(llm::parse_stream_line(line)), oracle::describe(oracle::reference_parse_stream_line(line)))
          << line;
    }
  }
  EXPECT_TRUE(llm::parse_stream_line("data: [DONE]").done);
  EXPECT_FALSE(llm::parse_stream_line(": keep-alive").delta);
}

TEST(ChunkScan, AgreesWithTheTreeReadingOnTwentyThousandMutations) {
  std::mt19937 rng(20261130);  // fixed: a failure is reproducible
  const std::string alphabet = "{}[]\":,0123456789.-eE\\u tnrfalsenul\xc3\xa9\xff";
  const std::vector<std::string> words = {"\"choices\"", "\"delta\"", "\"content\"", "\"tool_calls\"", "\"index\"",
                                          "\"function\"", "\"arguments\"", "\"error\"", "\"message\"", "\"finish_reason\"",
                                          "[", "{", "}", "]", "null", "1e400", "-1", "128", "\"x\""};
  for (int n = 0; n < 20000; ++n) {
    const std::string s = mutation::mutate(kChunks[rng() % kChunks.size()], rng, alphabet, words);
    const std::string line = "data: " + s;
    ASSERT_EQ(oracle::describe(llm::parse_stream_line(line)), oracle::describe(oracle::reference_parse_stream_line(line)))
        << "mutation " << n << ": " << line;
  }
}

// A stream read with a slot (llm_backend.cpp keeps one per request) reads every line as it reads
// without one, and as the tree reading does: the chunks servers write (the bench's upstream, a
// llama.cpp-like one with usage and timings at the end), each line with a new token's text, and
// mutations among them. The lines of a known shape with a plain string are read through the slot,
// and so are those whose `created` moved on as well (a time in whole seconds, before the text in
// OpenAI's and Ollama's chunks, after it in llama.cpp's); other numbers written there (a sign, a
// fraction, 19 digits, a leading zero) are read whole, or refused, as without a slot.
TEST(ChunkScan, AStreamReadThroughItsSlotReadsAsTheTreeReading) {
  const std::vector<std::pair<std::string, std::string>> shapes = {
      {R"(data: {"id":"chatcmpl-bench","object":"chat.completion.chunk","created":@,"model":"bench","choices":[{"index":0,"delta":{"content":")",
       R"("},"logprobs":null,"finish_reason":null}]})"},
      {R"(data:{"choices":[{"finish_reason":null,"index":0,"delta":{"content":")",
       R"("}}],"created":@,"id":"chatcmpl-x","model":"qwen","system_fingerprint":"b1-abc","object":"chat.completion.chunk"})"},
      {R"(data: {"choices":[{"delta":{"reasoning_content":null,"content":")", R"("}}]}   )"},
  };
  const std::vector<std::string> others = {
      R"(data: {"choices":[{"delta":{"role":"assistant","content":""}}]})",
      R"(data: {"choices":[{"delta":{},"finish_reason":"stop"}],"usage":{"prompt_tokens":3},"timings":{"predicted_ms":1.5}})",
      R"(data: {"choices":[{"delta":{"content":"x","reasoning":"r"}}]})",
      R"(data: {"choices":[{"delta":{"content":"x"},"finish_reason":"length"}]})",
      R"(data: {"choices":[{"delta":{"content":"x","tool_calls":[{"index":0,"id":"c","function":{"name":"f"}}]}}]})",
      R"(data: {"error":{"message":"overloaded"}})",
      ": keep-alive",
      "data: [DONE]",
  };
  std::mt19937 rng(20261205);
  const std::string alphabet = "{}[]\":,0123456789.-eE\\u tnrfalsenul\xc3\xa9\xff";
  const std::vector<std::string> words = {"\"choices\"", "\"delta\"", "\"content\"", "\"finish_reason\"", "\"error\"",
                                          "[", "{", "}", "]", "null", "\"x\"", " "};
  const std::vector<std::string> created = {"1764000000", "1764000001", "1764000010", "0", "7", "999999999999999999",
                                            "1764000000", "1764000001", "-1764000001", "1764000001.5", "1e9",
                                            "1234567890123456789", "01764000001", "null", "\"1764000001\""};
  auto at = [&](std::string piece, std::size_t c) {
    if (auto p = piece.find('@'); p != std::string::npos) piece.replace(p, 1, created[c]);
    return piece;
  };
  int lines = 0, through_slot = 0, created_moved = 0;
  for (int stream = 0; stream < 400; ++stream) {
    jsonio::StringSlot slot;
    std::size_t now = 0;  // the `created` of the stream's lines: the first, then a later one now and then
    std::size_t slot_now = 0;  // the one the last line of the shape had
    for (int i = 0; i < 50; ++i) {
      if (rng() % 5 == 0) now = rng() % created.size();
      const std::string before = at(shapes[stream % shapes.size()].first, now);
      const std::string after = at(shapes[stream % shapes.size()].second, now);
      std::string line;
      bool shaped = false;
      switch (rng() % 8) {
        case 0: line = others[rng() % others.size()]; break;
        case 1: line = mutation::mutate(before + mutation::string_body(rng, true) + after, rng, alphabet, words); break;
        default: line = before + mutation::string_body(rng, i % 3 != 0) + after, shaped = true; break;
      }
      std::string_view json = line;
      if (json.starts_with("data:")) json.remove_prefix(5);
      while (json.starts_with(' ')) json.remove_prefix(1);
      std::string ignored;
      const bool matched = slot.match(json, ignored);
      through_slot += matched;
      if (shaped) {  // read through the slot with a `created` other than the one it was learned with
        created_moved += matched && created[now] != created[slot_now];
        slot_now = now;
      }
      ++lines;
      const std::string with_slot = oracle::describe(llm::parse_stream_line(line, &slot));
      ASSERT_EQ(with_slot, oracle::describe(llm::parse_stream_line(line))) << "stream " << stream << ": " << line;
      ASSERT_EQ(with_slot, oracle::describe(oracle::reference_parse_stream_line(line))) << "stream " << stream << ": " << line;
    }
  }
  EXPECT_GT(through_slot, lines / 3);  // 7,349 of 20,000 with this seed: the rest are other lines, bad or \u strings,
                                      // numbers not an integer in `created`
  EXPECT_GT(created_moved, 800);  // 1,079 of them with a `created` other than the line's before
}
