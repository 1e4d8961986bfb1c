// The mcp_server codec: a tools/call read without a tree must read as the tree reads it, and a call's
// answer built as text must be the JSON the tree built.
#include "adapters/mcp_server/codec.hpp"

#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <random>

#include "json/read.hpp"
#include "mutate.hpp"

using namespace leuria;
namespace json = boost::json;

namespace {

// What the tree reading makes of a text the scan took: the same id, name and arguments (as values).
void expect_tree_agrees(const std::string& text, const mcp_server::ScannedCall& c) {
  auto o = jsonio::read_object(text);
  ASSERT_TRUE(o) << text;
  ASSERT_TRUE(o->contains("id") && o->at("method") == "tools/call" && !o->contains("result") && !o->contains("error"))
      << text;
  auto tree = mcp_server::parse_tool_call(o->at("params"));
  ASSERT_TRUE(tree) << text;
  EXPECT_EQ(c.call.name, tree->name) << text;
  EXPECT_EQ(json::parse(c.call.arguments_json), json::parse(tree->arguments_json)) << text;
  EXPECT_EQ(json::parse(c.id_json), o->at("id")) << text;
  EXPECT_TRUE(o->at("id").is_string() || o->at("id").is_int64()) << text;
}

TEST(McpCodec, ToolCallsAreReadWithoutATreeAsTheTreeReadsThem) {
  const std::vector<std::string> taken = {
      R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}})",
      R"({ "params" : { "arguments" : { "q" : [1, 2.50, "}\"]"] }, "name" : "look\u0075p" }, "method":"tools/call", "id" : "a\"b" })",
      R"({"jsonrpc":"2.0","id":-3,"method":"tools/call","params":{"name":"t","_meta":{"progressToken":1}}})"};
  for (const auto& t : taken) {
    auto c = mcp_server::scan_tool_call(t);
    ASSERT_TRUE(c) << t;
    expect_tree_agrees(t, *c);
  }
  EXPECT_EQ(mcp_server::scan_tool_call(taken[1])->call.arguments_json, R"({ "q" : [1, 2.50, "}\"]"] })");
  EXPECT_EQ(mcp_server::scan_tool_call(taken[1])->id_json, R"("a\"b")");
  EXPECT_EQ(mcp_server::scan_tool_call(taken[2])->call.arguments_json, "{}");  // none: {}

  // Left to the tree: other methods, notifications, responses, odd ids, no name, broken texts.
  const std::vector<std::string> left = {
      R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"t"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{}})", R"({"jsonrpc":"2.0","id":1.5,"method":"tools/call","params":{"name":"t"}})",
      R"({"jsonrpc":"2.0","id":null,"method":"tools/call","params":{"name":"t"}})",
      R"({"jsonrpc":"2.0","id":{"a":1},"method":"tools/call","params":{"name":"t"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":""}})", R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t"},"error":1})",
      R"({"id":1,"method":"tools/call","params":{"name":"t","name":"u"}})", R"([{"id":1,"method":"tools/call"}])", "{",
      // arguments that are not an object: the tree says why (or, for null, that they are none)
      R"({"jsonrpc":"2.0","id":"x","method":"tools/call","params":{"name":"t","arguments":[1]}})",
      R"({"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"t","arguments":"{\"q\":\"x\"}"}})",
      R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"t","arguments":7}})",
      R"({"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"t","arguments":null}})"};
  for (const auto& t : left) EXPECT_FALSE(mcp_server::scan_tool_call(t)) << t;

  std::mt19937 rng(20261201);
  const std::string alphabet = "{}[]:,\"\\ 0123456789.eE+-tfnulx\xc3\xa9\xff";
  const std::vector<std::string> words = {"true", "null", "\"a\"", "[[[", "]]]", "\"id\":", "\"params\":{", "\\u00",
                                          ",\"name\":\"n\"", "\"arguments\":"};
  std::vector<std::string> seeds = taken;
  seeds.insert(seeds.end(), left.begin(), left.end());
  for (int n = 0; n < 20000; ++n) {
    const std::string s = mutation::mutate(seeds[rng() % seeds.size()], rng, alphabet, words);
    SCOPED_TRACE("mutation " + std::to_string(n));
    if (auto c = mcp_server::scan_tool_call(s)) expect_tree_agrees(s, *c);
    if (HasFatalFailure()) return;
  }
}

// MCP's arguments are an object. Any other value, passed on as {}, had the page run the tool with none
// of what the AI meant: it is refused (-32602) so the AI learns its mistake. Absent or null: {}.
TEST(McpCodec, ArgumentsThatAreNotAnObjectAreRefused) {
  auto tool = [](const char* params) { return mcp_server::parse_tool_call(json::parse(params)); };
  for (const char* bad : {R"({"name":"t","arguments":"{\"q\":\"x\"}"})", R"({"name":"t","arguments":[1]})",
                          R"({"name":"t","arguments":7})", R"({"name":"t","arguments":false})"}) {
    auto c = tool(bad);
    ASSERT_FALSE(c) << bad;
    EXPECT_EQ(c.error().message, "arguments must be an object") << bad;
  }
  EXPECT_EQ(tool(R"({"name":"t","arguments":null})")->arguments_json, "{}");
  EXPECT_EQ(tool(R"({"name":"t"})")->arguments_json, "{}");
  EXPECT_EQ(json::parse(tool(R"({"name":"t","arguments":{"q":"x"}})")->arguments_json), json::parse(R"({"q":"x"})"));
  EXPECT_EQ(tool(R"({"arguments":{}})").error().message, "Invalid params");
  auto prompt = mcp_server::parse_prompt_get(json::parse(R"({"name":"p","arguments":"topic"})"));
  ASSERT_FALSE(prompt);
  EXPECT_EQ(prompt.error().message, "arguments must be an object");
  // a resource has no arguments: whatever else params holds is not read
  EXPECT_EQ(mcp_server::parse_resource_read(json::parse(R"({"uri":"page://a","arguments":"x"})"))->arguments_json, "{}");
}

TEST(McpCodec, AToolResultBuiltAsTextIsTheMcpResult) {
  core::PageAnswer a;
  a.text = "caf\xc3\xa9 \"quoted\"\n";
  EXPECT_EQ(json::parse(mcp_server::tool_result(a)),
            json::parse(R"({"content":[{"type":"text","text":"café \"quoted\"\n"}],"isError":false})"));
  a.text = "The catalog is offline.";
  EXPECT_EQ(json::parse(mcp_server::tool_result(a, true)),
            json::parse(R"({"content":[{"type":"text","text":"The catalog is offline."}],"isError":true})"));
}

// MCP's split: a tool call the page was sent that came back without a result, or whose session ended, is a
// failed call (isError); one refused before the page was asked, and any resource or prompt that failed, a
// JSON-RPC error.
TEST(McpCodec, ACallsAnswerIsAFailedToolCallOnlyWhenThePageWasAskedForATool) {
  using S = core::PageAnswer::Status;
  using K = core::PageCall::Kind;
  auto answer = [](K kind, S status) {
    return json::parse(mcp_server::call_answer(kind, "test://r", "7", core::PageAnswer{status, "why", {}}));
  };
  auto failed_call = json::parse(R"({"jsonrpc":"2.0","id":7,"result":{"content":[{"type":"text","text":"why"}],"isError":true}})");
  auto error = [](int code) {
    return json::value{{"jsonrpc", "2.0"}, {"id", 7}, {"error", {{"code", code}, {"message", "why"}}}};
  };
  for (S s : {S::failed, S::timed_out, S::dropped, S::ended}) EXPECT_EQ(answer(K::tool, s), failed_call);
  EXPECT_EQ(answer(K::tool, S::busy), error(-32000));
  EXPECT_EQ(answer(K::tool, S::not_connected), error(-32001));
  EXPECT_EQ(answer(K::tool, S::cancelled), error(-32800));
  for (K k : {K::resource, K::prompt}) {
    EXPECT_EQ(answer(k, S::failed), error(-32000));
    EXPECT_EQ(answer(k, S::timed_out), error(-32000));
    EXPECT_EQ(answer(k, S::ended), error(-32000));
    EXPECT_EQ(answer(k, S::busy), error(-32000));
    EXPECT_EQ(answer(k, S::dropped), error(-32001));
    EXPECT_EQ(answer(k, S::not_connected), error(-32001));
  }
  core::PageAnswer ok{S::answered, "found", "\"found\""};
  EXPECT_EQ(json::parse(mcp_server::call_answer(K::tool, "lookup", "\"a\"", ok)),
            json::parse(R"({"jsonrpc":"2.0","id":"a","result":{"content":[{"type":"text","text":"found"}],"isError":false}})"));
  EXPECT_EQ(json::parse(mcp_server::call_answer(K::resource, "test://r", "1", ok)),
            json::parse(R"({"jsonrpc":"2.0","id":1,"result":{"contents":[{"uri":"test://r","text":"found"}]}})"));
}

TEST(McpCodec, AMessagesKindIsReadFromItsMembers) {
  using K = mcp_server::MessageKind;
  auto kind = [](const char* text) { return mcp_server::message_kind(json::parse(text).as_object()); };
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":1,"method":"ping"})"), K::request);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":null,"method":"ping"})"), K::request);  // a null id is still an id
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), K::notification);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":"a","result":{}})"), K::response);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":2,"error":{"code":1,"message":"no"}})"), K::response);
  EXPECT_EQ(kind(R"({})"), K::invalid);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":5})"), K::invalid);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","id":5,"method":42})"), K::invalid);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","method":42,"result":{}})"), K::invalid);
  EXPECT_EQ(kind(R"({"jsonrpc":"2.0","result":{}})"), K::invalid);  // a result with no id answers nothing
}

TEST(McpCodec, ACancellationNamesItsRequestsId) {
  auto named = [](const char* text) { return mcp_server::cancelled_request(json::parse(text).as_object()); };
  EXPECT_EQ(named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"x"}})"), "7");
  EXPECT_EQ(named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a\"b"}})"), R"("a\"b")");
  EXPECT_FALSE(named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})"));
  EXPECT_FALSE(named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":null}})"));
  EXPECT_FALSE(named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":[7]})"));
  EXPECT_FALSE(named(R"({"jsonrpc":"2.0","id":1,"method":"notifications/cancelled","params":{"requestId":7}})"));
  EXPECT_FALSE(named(R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"requestId":7}})"));
  EXPECT_EQ(mcp_server::call_tag("s1", "7"), "s1\n7");
  EXPECT_NE(mcp_server::call_tag("s1", "7"), mcp_server::call_tag("s2", "7"));
  // an id written with escapes is tagged in the form its cancellation names it
  EXPECT_EQ(mcp_server::call_tag("", R"("a\/b\u00e9")"),
            mcp_server::call_tag("", *named(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"a/b\u00e9"}})")));
}

}  // namespace
