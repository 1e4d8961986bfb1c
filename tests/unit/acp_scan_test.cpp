// acp_client::scan_text_update, the fast path for an agent's text chunks: whenever it reads a line,
// it must read it as the whole way does (rpc::Connection's decoding, then parse_update), on the
// chunk lines agents write, on lines it must leave to the whole way, and on mutations of both.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <random>

#include "mutate.hpp"

#include "adapters/acp_client/codec.hpp"
#include "json/read.hpp"

using namespace leuria;
namespace json = boost::json;

namespace {

std::string describe(const std::optional<acp_client::Update>& u) {
  if (!u) return "-";
  return std::to_string(static_cast<int>(u->kind)) + ":" + u->text;
}

// The whole way, as a text update: what rpc::Connection::receive hands AcpBackend::on_notification
// for a notification, and what parse_update makes of it. nullopt when that is no text update.
std::optional<acp_client::Update> whole_way(std::string_view line) {
  auto o = jsonio::read_object(line);
  if (!o) return std::nullopt;
  const json::value* id = o->if_contains("id");
  const json::value* method = o->if_contains("method");
  if (!method || !method->is_string() || (id && !id->is_null()) || method->as_string() != "session/update")
    return std::nullopt;
  auto u = acp_client::parse_update(o->contains("params") ? o->at("params") : json::value(nullptr));
  if (u.kind != acp_client::Update::Kind::chunk && u.kind != acp_client::Update::Kind::thought) return std::nullopt;
  return u;
}

const std::vector<std::string> kFast = {
    R"({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"s1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"chunk 1\n"}}}})",
    R"({"params":{"update":{"content":{"text":"th\u00e9 \"q\" \ud83d\ude00","type":"text"},"sessionUpdate":"agent_thought_chunk"},"sessionId":"s"},"method":"session/update","jsonrpc":"2.0"})",
    R"({"jsonrpc":"2.0","method":"session/upd\u0061te","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":""}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x","annotations":{"a":[1,2]}}},"extra":[{}]}})",
};

// Lines the fast path leaves to the whole way (which may still find a text update in some).
const std::vector<std::string> kSlow = {
    R"({"jsonrpc":"2.0","id":3,"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a request"}}}})",
    R"({"jsonrpc":"2.0","id":null,"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"null id"}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"n"},"_meta":{"claudeCode":{"kind":"informational"}}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"image","data":"AA=="}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":7}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text"}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"tool_call","toolCallId":"t","title":"x"}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"plan","entries":[]}}})",
    R"({"method":"session/update","params":{"update":"agent_message_chunk"}})",
    R"({"method":"session/update","params":[]})",
    R"({"method":"session/update"})",
    R"({"method":"session/request_permission","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}})",
    R"({"method":7,"params":{}})",
    R"({"jsonrpc":"2.0","id":1,"result":{"stopReason":"end_turn"}})",
    R"({"method":"session/update","method":"session/update","params":{}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"a","text":"b"}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"bad \xff"}}}})",
    R"({"method":"session/update","params":{"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"x"}}}} trailing)",
    R"([{"method":"session/update"}])",
    "",
    "   ",
    "npm WARN something printed to stdout",
};

}  // namespace

TEST(AcpTextUpdateScan, ReadsAgentsChunkLinesAsTheWholeWayDoes) {
  for (auto& line : kFast) {
    auto fast = acp_client::scan_text_update(line);
    ASSERT_TRUE(fast) << line;
    EXPECT_EQ(describe(fast), describe(whole_way(line))) << line;
  }
  EXPECT_EQ(acp_client::scan_text_update(kFast[0])->text, "chunk 1\n");
  EXPECT_EQ(acp_client::scan_text_update(kFast[1])->kind, acp_client::Update::Kind::thought);
}

TEST(AcpTextUpdateScan, LeavesEveryOtherLineToTheWholeWay) {
  for (auto& line : kSlow) EXPECT_FALSE(acp_client::scan_text_update(line)) << line;
}

TEST(AcpTextUpdateScan, NeverDisagreesWithTheWholeWayOnTwentyThousandMutations) {
  std::mt19937 rng(20261130);  // fixed: a failure is reproducible
  const std::string alphabet = "{}[]\":,0123456789.-eE\\u tnrfalsenul\xc3\xa9\xff";
  const std::vector<std::string> words = {"\"method\"", "\"params\"", "\"update\"", "\"sessionUpdate\"", "\"content\"",
                                          "\"type\"", "\"text\"", "\"id\"", "\"_meta\"", "\"agent_thought_chunk\"",
                                          "\"session/update\"", "[", "{", "}", "]", "null", "1e400", "\"x\""};
  std::vector<std::string> seeds = kFast;
  seeds.insert(seeds.end(), kSlow.begin(), kSlow.begin() + 6);
  int fast_taken = 0;
  for (int n = 0; n < 20000; ++n) {
    const std::string s = mutation::mutate(seeds[rng() % seeds.size()], rng, alphabet, words);
    auto fast = acp_client::scan_text_update(s);
    if (!fast) continue;
    ++fast_taken;
    ASSERT_EQ(describe(fast), describe(whole_way(s))) << "mutation " << n << ": " << s;
  }
  EXPECT_GT(fast_taken, 250);  // the mutations reach the fast path, not only the fallback (382 with this seed)
}

// An agent's lines read with its slot (acp_backend.cpp keeps one per agent) read as they read
// without one, and as the whole way does: chunk and thought lines, each with a new token's text,
// other lines between them, and mutations. Chunk lines of a known shape with a plain string are read
// through the slot.
TEST(AcpTextUpdateScan, LinesReadThroughTheSlotReadAsTheWholeWay) {
  const std::vector<std::pair<std::string, std::string>> shapes = {
      {R"({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":")",
       R"("}}}})"},
      {R"({"jsonrpc":"2.0","method":"session/update","params":{"sessionId":"sess_1","update":{"sessionUpdate":"agent_thought_chunk","content":{"type":"text","text":")",
       R"("}}}})"},
      {R"({"params":{"update":{"content":{"text":")", R"(","type":"text"},"sessionUpdate":"agent_message_chunk"},"sessionId":"s"},"method":"session/update"}  )"},
  };
  std::mt19937 rng(20261206);
  const std::string alphabet = "{}[]\":,0123456789.-eE\\u tnrfalsenul\xc3\xa9\xff";
  const std::vector<std::string> words = {"\"method\"", "\"params\"", "\"update\"", "\"content\"", "\"type\"", "\"text\"",
                                          "\"id\"", "\"_meta\"", "[", "{", "}", "]", "null", "\"x\"", " "};
  int lines = 0, through_slot = 0;
  for (int agent = 0; agent < 400; ++agent) {
    acp_client::TextSlot slot;
    for (int i = 0; i < 50; ++i) {
      const auto& [before, after] = shapes[(agent + i / 10) % shapes.size()];  // the shape changes now and then
      std::string line;
      switch (rng() % 8) {
        case 0: line = kSlow[rng() % kSlow.size()]; break;
        case 1: line = mutation::mutate(before + mutation::string_body(rng, true) + after, rng, alphabet, words); break;
        default: line = before + mutation::string_body(rng, i % 3 != 0) + after; break;
      }
      std::string ignored;
      through_slot += slot.text.match(line, ignored);
      ++lines;
      const auto with_slot = acp_client::scan_text_update(line, &slot);
      ASSERT_EQ(describe(with_slot), describe(acp_client::scan_text_update(line))) << "agent " << agent << ": " << line;
      if (with_slot) {
        ASSERT_EQ(describe(with_slot), describe(whole_way(line))) << "agent " << agent << ": " << line;
      }
    }
  }
  EXPECT_GT(through_slot, lines / 4);  // 6,470 of 20,000 with this seed: the rest are other lines, bad or \u strings
}
