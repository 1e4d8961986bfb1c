// The codecs of the two backend doors and the permission policy.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "adapters/acp_client/codec.hpp"
#include "adapters/llm/codec.hpp"
#include "core/permission.hpp"

using namespace leuria;
namespace json = boost::json;

TEST(Permission, OnlyThePagesToolsUnderAnyAgentsName) {
  std::vector<std::string> tools{"lookup", "cart_add"};
  EXPECT_EQ(core::page_tool_named({"mcp__webmcp__lookup"}, tools), "lookup");
  EXPECT_EQ(core::page_tool_named({"mcp_webmcp_cart_add"}, tools), "cart_add");
  EXPECT_EQ(core::page_tool_named({"lookup (webmcp MCP Server)"}, tools), "lookup");
  EXPECT_FALSE(core::page_tool_named({"Bash"}, tools));
  EXPECT_FALSE(core::page_tool_named({"mcp__other__lookup"}, tools));
  EXPECT_FALSE(core::page_tool_named({"mcp__webmcp__delete"}, tools));
  EXPECT_FALSE(core::page_tool_named({"mcp__webmcp__lookup"}, {}));
}

TEST(Permission, OptionsByKindNeverById) {
  std::vector<core::PermissionOption> claude{{"allow-once", "allow_once"}, {"allow-with-updates", "allow_always"},
                                             {"reject", "reject_once"}};
  std::vector<core::PermissionOption> gemini{{"proceed_once", "allow_once"}, {"proceed_always_tool", "allow_always"},
                                             {"cancel", "reject_once"}};
  EXPECT_EQ(core::choose_option(true, claude), "allow-once");
  EXPECT_EQ(core::choose_option(false, claude), "reject");
  EXPECT_EQ(core::choose_option(true, gemini), "proceed_once");
  EXPECT_EQ(core::choose_option(false, gemini), "cancel");
  EXPECT_EQ(core::choose_option(true, {{"always", "allow_always"}}), "always");
  EXPECT_FALSE(core::choose_option(false, {{"yes", "allow_once"}}));
}

TEST(LlmCodec, StreamedDeltasWithToolCallsAndReasoning) {
  auto l = llm::parse_stream_line(
      R"(data: {"choices":[{"index":0,"delta":{"content":"Hi","reasoning_content":"hm","tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"lookup","arguments":"{\"q\""}}]},"finish_reason":null}]})");
  ASSERT_TRUE(l.delta);
  EXPECT_EQ(l.delta->content, "Hi");
  EXPECT_EQ(l.delta->reasoning, "hm");
  ASSERT_EQ(l.delta->tool_calls.size(), 1u);
  EXPECT_EQ(l.delta->tool_calls[0].index, 1);
  EXPECT_EQ(l.delta->tool_calls[0].id, "c1");
  EXPECT_EQ(l.delta->tool_calls[0].arguments, "{\"q\"");
  EXPECT_TRUE(llm::parse_stream_line("data: [DONE]").done);
  EXPECT_FALSE(llm::parse_stream_line(": keep-alive").delta);
  EXPECT_EQ(llm::parse_stream_line(R"(data: {"choices":[{"delta":{"reasoning":"r"}}]})").delta->reasoning, "r");
  EXPECT_EQ(*llm::parse_stream_line(R"(data: {"error":{"message":"overloaded"}})").delta->error, "overloaded");
}

TEST(LlmCodec, RequestsAndMessages) {
  json::array messages{llm::system_message("sys"), llm::user_message({{core::PromptBlock::Type::text, "hi", {}, {}}})};
  auto body = json::parse(llm::request_body("m", messages, {{"lookup", "Look", R"({"type":"object"})"}}, true));
  EXPECT_EQ(body.at("stream"), true);
  EXPECT_EQ(body.at("tool_choice"), "none");
  EXPECT_EQ(body.at("tools").at(0).at("function").at("name"), "lookup");
  auto image = llm::user_message({{core::PromptBlock::Type::text, "see", {}, {}},
                                  {core::PromptBlock::Type::image, {}, "image/png", "AAAA"}});
  EXPECT_EQ(image.at("content").at(1).at("image_url").at("url"), "data:image/png;base64,AAAA");
  EXPECT_EQ(llm::parse_models(R"({"data":[{"id":"a"},{"id":"b"}]})"), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(llm::error_message(R"({"error":{"message":"model not found"}})"), "model not found");
}

// A model that refuses images: every image part in the conversation becomes its note, in order; the
// rest of each message stays as it was.
TEST(LlmCodec, ImagesBecomeTheirNotes) {
  json::array messages{
      llm::user_message({{core::PromptBlock::Type::text, "one", {}, {}},
                         {core::PromptBlock::Type::image, "note a", "image/png", "AAAA"},
                         {core::PromptBlock::Type::image, "note b", "image/jpeg", "BBBB"}}),
      llm::assistant_message("seen", {}),
      llm::user_message({{core::PromptBlock::Type::text, "two", {}, {}},
                         {core::PromptBlock::Type::image, "note c", "image/png", "CCCC"}})};
  llm::images_to_notes(messages, {"note a", "note b"});
  EXPECT_EQ(messages[0].at("content"), json::parse(R"([{"type":"text","text":"one"},{"type":"text","text":"note a"},
                                                      {"type":"text","text":"note b"}])"));
  EXPECT_EQ(messages[1].at("content"), "seen");
  EXPECT_EQ(messages[2].at("content").at(0).at("text"), "two");
  EXPECT_EQ(messages[2].at("content").at(1).at("type"), "text");  // the list ran short: a plain note
  EXPECT_NE(messages[2].at("content").at(1).at("text").as_string().find("can't read"), json::string::npos);
  EXPECT_EQ(llm::request_body("m", messages, {}, false).find("image_url"), std::string::npos);
}

// The body is written member by member (no object holding a copy of the conversation): the same
// text a serialized object gave, escapes included, with and without tools.
TEST(LlmCodec, RequestBodyIsTheObjectsText) {
  json::array messages{llm::system_message("be \"brief\"\n"), llm::user_message({{core::PromptBlock::Type::text, "hi", {}, {}}})};
  EXPECT_EQ(llm::request_body("m\"1", messages, {}, false),
            json::serialize(json::object{{"model", "m\"1"}, {"messages", messages}, {"stream", true}}));
  const std::vector<core::ToolSpec> tools{{"lookup", "Look", R"({"type":"object","properties":{"q":{"type":"string"}}})"},
                                          {"echo", "Say", "not json"}};
  json::array list;
  for (auto& t : tools) {
    json::value schema = json::object{{"type", "object"}, {"properties", json::object{}}};
    if (t.name == "lookup") schema = json::parse(t.input_schema_json);
    list.push_back(json::object{
        {"type", "function"},
        {"function", json::object{{"name", t.name}, {"description", t.description}, {"parameters", schema}}}});
  }
  EXPECT_EQ(llm::request_body("m", messages, tools, true),
            json::serialize(json::object{{"model", "m"}, {"messages", messages}, {"stream", true}, {"tools", list},
                                         {"tool_choice", "none"}}));
  EXPECT_EQ(llm::request_body("m", messages, tools, false),
            json::serialize(json::object{{"model", "m"}, {"messages", messages}, {"stream", true}, {"tools", list}}));
}

TEST(AcpCodec, ClaudeGetsItsBuiltinsTurnedOff) {
  acp_client::NewSessionParams p;
  p.cwd = "/tmp/x";
  p.claude = true;
  p.system_prompt = "be brief";
  p.mcp_url = "http://127.0.0.1:1/webmcp/mcp";
  p.mcp_token = "tok";
  auto v = acp_client::new_session_params(p);
  auto& opts = v.at("_meta").at("claudeCode").at("options");
  EXPECT_EQ(opts.at("tools"), json::array{});
  EXPECT_EQ(opts.at("allowedTools"), json::array{"mcp__webmcp"});
  EXPECT_EQ(opts.at("strictMcpConfig"), true);
  EXPECT_EQ(opts.at("settingSources"), json::array{});
  EXPECT_FALSE(opts.as_object().contains("maxTurns"));  // none given
  p.max_turns = 7;
  EXPECT_EQ(acp_client::new_session_params(p).at("_meta").at("claudeCode").at("options").at("maxTurns"), 7);
  EXPECT_EQ(v.at("_meta").at("systemPrompt"), "be brief");
  EXPECT_EQ(v.at("mcpServers").at(0).at("type"), "http");
  EXPECT_EQ(v.at("mcpServers").at(0).at("headers").at(0).at("value"), "Bearer tok");
  p.claude = false;
  p.http_mcp = false;
  p.engine_path = "/usr/bin/leuria";
  auto s = acp_client::new_session_params(p);
  EXPECT_FALSE(s.as_object().contains("_meta"));
  EXPECT_EQ(s.at("mcpServers").at(0).at("args"), (json::array{"mcp-stdio", "http://127.0.0.1:1/webmcp/mcp"}));
}

TEST(AcpCodec, UpdatesAndPermissionRequests) {
  auto chunk = acp_client::parse_update(json::parse(
      R"({"sessionId":"s","update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Hi"}}})"));
  EXPECT_EQ(chunk.kind, acp_client::Update::Kind::chunk);
  EXPECT_EQ(chunk.text, "Hi");
  auto tool = acp_client::parse_update(json::parse(
      R"({"sessionId":"s","update":{"sessionUpdate":"tool_call","toolCallId":"t1","title":"lookup","status":"pending","_meta":{"claudeCode":{"toolName":"mcp__webmcp__lookup"}}}})"));
  EXPECT_EQ(tool.kind, acp_client::Update::Kind::tool_call);
  EXPECT_EQ(tool.tool_call.tool_name, "mcp__webmcp__lookup");
  auto notice = acp_client::parse_update(json::parse(
      R"({"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text","text":"Auto mode bills"},"_meta":{"claudeCode":{"kind":"informational"}}}})"));
  EXPECT_EQ(notice.kind, acp_client::Update::Kind::notice);
  EXPECT_EQ(acp_client::parse_update(json::parse(R"({"update":{"sessionUpdate":"usage_update"}})")).kind,
            acp_client::Update::Kind::none);
  auto perm = acp_client::parse_permission_request(json::parse(
      R"({"sessionId":"s","toolCall":{"toolCallId":"t1","title":"Bash"},"options":[{"optionId":"proceed_once","name":"Yes","kind":"allow_once"}]})"));
  EXPECT_EQ(perm.names, std::vector<std::string>{"Bash"});
  ASSERT_EQ(perm.options.size(), 1u);
  EXPECT_EQ(perm.options[0].kind, "allow_once");
  // A built-in's title is the model's text (a shell command): it never names a page tool.
  auto shell = acp_client::parse_permission_request(json::parse(
      R"({"sessionId":"s","toolCall":{"toolCallId":"t2","title":"mcp__webmcp__lookup","kind":"execute"},"options":[]})"));
  EXPECT_TRUE(shell.names.empty());
  EXPECT_EQ(acp_client::permission_result(std::nullopt).at("outcome").at("outcome"), "cancelled");
  EXPECT_EQ(acp_client::permission_result("x").at("outcome").at("optionId"), "x");
}
