// The codecs of the two backend doors and the permission policy.
#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "adapters/acp_client/codec.hpp"
#include "adapters/acp_client/tool_names.hpp"
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

// A stream that fails after its 200: llama.cpp's `error:` line, an `event: error` and its data line.
TEST(LlmCodec, ErrorsInsideTheStream) {
  bool in_error = false;
  auto e = llm::parse_event_line(
      R"(error: {"code":400,"message":"the request exceeds the available context size","type":"exceed_context_size_error"})",
      in_error);
  ASSERT_TRUE(e.delta && e.delta->error);
  EXPECT_EQ(*e.delta->error, "the request exceeds the available context size");
  EXPECT_EQ(*llm::parse_event_line(R"(error:{"error":{"message":"nested"}})", in_error).delta->error, "nested");
  EXPECT_EQ(*llm::parse_event_line("error: plain words", in_error).delta->error, "plain words");
  EXPECT_EQ(*llm::parse_event_line(R"(error: {"code":1})", in_error).delta->error, "The model server reported an error");

  EXPECT_FALSE(llm::parse_event_line("event: error", in_error).delta);
  EXPECT_TRUE(in_error);
  EXPECT_EQ(*llm::parse_event_line(R"(data: {"message":"overloaded"})", in_error).delta->error, "overloaded");
  EXPECT_FALSE(llm::parse_event_line("", in_error).delta);
  EXPECT_FALSE(in_error);  // the event ended: the next data line is a chunk again
  EXPECT_FALSE(llm::parse_event_line("event: message", in_error).delta);
  EXPECT_FALSE(in_error);
  EXPECT_FALSE(llm::parse_event_line(": keep-alive", in_error).delta);
  EXPECT_FALSE(llm::parse_event_line("id: 7", in_error).delta);

  // "error": null in a chunk is no error (some servers put it in every chunk).
  auto ok = llm::parse_stream_line(R"(data: {"choices":[{"delta":{"content":"x"}}],"error":null})");
  ASSERT_TRUE(ok.delta);
  EXPECT_FALSE(ok.delta->error);
  EXPECT_EQ(ok.delta->content, "x");
}

TEST(LlmCodec, ErrorBodiesReadAsOneShortLine) {
  EXPECT_EQ(llm::error_message(R"({"object":"error","message":"too long\nsecond line","type":"BadRequestError"})"),
            "too long second line");
  EXPECT_EQ(llm::error_message(R"({"detail":"Not Found"})"), "Not Found");
  EXPECT_EQ(llm::error_message(R"({"detail":[{"loc":["body","model"],"msg":"field required","type":"missing"}]})"),
            "field required");
  EXPECT_EQ(llm::error_message(R"({"error":"model \"x\" not found"})"), "model \"x\" not found");
  const std::string cut = llm::error_message(R"({"error":{"message":")" + std::string(1000, 'x') + R"("}})");
  EXPECT_LE(cut.size(), 204u);
  EXPECT_TRUE(cut.ends_with("\u2026")) << cut;
  EXPECT_EQ(llm::one_line("a\r\n\r\n  b\tc\n"), "a   b c");
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
  // Not known to be Claude: still locked down (a Claude we failed to recognise has no shell), but its
  // system prompt and maxTurns are not put where only Claude reads them.
  auto& other = s.at("_meta").at("claudeCode").at("options");
  EXPECT_EQ(other.at("tools"), json::array{});
  EXPECT_EQ(other.at("settingSources"), json::array{});
  EXPECT_EQ(other.at("strictMcpConfig"), true);
  EXPECT_EQ(other.at("disallowedTools"), opts.at("disallowedTools"));
  EXPECT_FALSE(other.as_object().contains("maxTurns"));
  EXPECT_FALSE(s.at("_meta").as_object().contains("systemPrompt"));
  EXPECT_EQ(s.at("mcpServers").at(0).at("args"), (json::array{"mcp-stdio", "http://127.0.0.1:1/webmcp/mcp"}));
}

TEST(AcpCodec, ClaudeIsKnownByTheNameItReportsFirst) {
  using acp_client::is_claude_code;
  // Its own name decides, whatever the visitor called it or how it is started.
  EXPECT_TRUE(is_claude_code("@agentclientprotocol/claude-agent-acp", "my-claude", "npx"));
  EXPECT_TRUE(is_claude_code("@zed-industries/claude-code-acp", "assistant", "/usr/bin/env"));
  EXPECT_TRUE(is_claude_code("Claude-Code", "x", "x"));
  EXPECT_FALSE(is_claude_code("gemini-cli", "claude-acp", "/home/claude/bin/claude-agent-acp"));
  // No name: the configured id, or the command's file name (not a folder on its way).
  EXPECT_TRUE(is_claude_code(std::nullopt, "claude-acp", "npx"));
  EXPECT_TRUE(is_claude_code(std::nullopt, "x", "/opt/bin/claude-code-acp"));
  EXPECT_TRUE(is_claude_code(std::string(), "x", "claude-agent-acp"));
  EXPECT_FALSE(is_claude_code(std::nullopt, "gemini", "/home/claude/bin/gemini"));
}

TEST(AcpCodec, InitializeGivesTheAgentsName) {
  auto named = acp_client::parse_initialize(
      json::parse(R"({"protocolVersion":1,"agentInfo":{"name":"@agentclientprotocol/claude-agent-acp","version":"0.1"}})"));
  ASSERT_TRUE(named);
  EXPECT_EQ(named->name, "@agentclientprotocol/claude-agent-acp");
  auto unnamed = acp_client::parse_initialize(json::parse(R"({"protocolVersion":1,"agentInfo":{"name":7}})"));
  ASSERT_TRUE(unnamed);
  EXPECT_FALSE(unnamed->name);
}

TEST(AcpToolNames, AFinishedCallIsForgottenAndTheMapHasABound) {
  acp_client::ToolNames names;
  EXPECT_EQ(names.seen("t1", "mcp__webmcp__lookup", "pending"), "mcp__webmcp__lookup");
  EXPECT_EQ(names.seen("t1", "", "in_progress"), "mcp__webmcp__lookup");  // an update without a name
  EXPECT_EQ(names.find("t1"), "mcp__webmcp__lookup");
  EXPECT_EQ(names.seen("t1", "", "completed"), "mcp__webmcp__lookup");
  EXPECT_FALSE(names.find("t1"));
  names.seen("t2", "x", std::nullopt);
  names.seen("t2", "", "failed");
  EXPECT_EQ(names.size(), 0u);
  // Ids and names no page tool could have are not kept.
  names.seen(std::string(acp_client::ToolNames::kMaxIdBytes + 1, 'i'), "x", "pending");
  names.seen("t3", std::string(acp_client::ToolNames::kMaxNameBytes + 1, 'n'), "pending");
  EXPECT_EQ(names.size(), 0u);
  // An agent that opens calls without end fills the slots and no more; the open ones still answer.
  for (int i = 0; i < 10000; ++i) names.seen("c" + std::to_string(i), "tool" + std::to_string(i), "pending");
  EXPECT_EQ(names.size(), acp_client::ToolNames::kMaxCalls);
  EXPECT_EQ(names.find("c0"), "tool0");
  EXPECT_EQ(names.seen("c0", "renamed", "pending"), "renamed");
  EXPECT_EQ(names.find("c0"), "renamed");
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
