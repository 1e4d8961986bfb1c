// The page's tools: declarations, calls to the page, and the WebMCP codec.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "adapters/web/webmcp_codec.hpp"
#include "core/page_tools.hpp"
#include "core/random.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {
struct Link final : core::PageLink {
  std::vector<core::PageCall> calls;
  bool closed = false;
  void send_call(const core::PageCall& c) override { calls.push_back(c); }
  void close() override { closed = true; }
};

struct Fixture {
  asio::io_context ioc;
  std::shared_ptr<core::PageTools> tools = std::make_shared<core::PageTools>(ioc.get_executor(), 100ms);
  std::shared_ptr<std::optional<core::ToolResult>> call(std::string name) {
    auto slot = std::make_shared<std::optional<core::ToolResult>>();
    asio::co_spawn(ioc, tools->call(std::move(name), "{}"), [slot](std::exception_ptr, core::ToolResult r) { *slot = r; });
    ioc.restart();
    ioc.poll();
    return slot;
  }
};
}  // namespace

TEST(PageTools, ToolNamesAreWhatEveryAgentAccepts) {
  EXPECT_TRUE(core::valid_tool_name("search_products-2"));
  EXPECT_FALSE(core::valid_tool_name(""));
  EXPECT_FALSE(core::valid_tool_name("rm -rf"));
  EXPECT_FALSE(core::valid_tool_name(std::string(65, 'a')));
  EXPECT_FALSE(core::valid_tool_name("名前"));
}

TEST(PageTools, ACallGoesToThePageAndBack) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  ASSERT_TRUE(f.tools->add_tool({"lookup", "", "{}"}, ""));
  auto slot = f.call("lookup");
  ASSERT_EQ(link->calls.size(), 1u);
  f.tools->answer(link->calls[0].id, {core::PageAnswer::Status::answered, "found", "\"found\""});
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_TRUE(*slot);
  EXPECT_FALSE((*slot)->is_error);
  EXPECT_EQ((*slot)->text, "found");
}

TEST(PageTools, NotConnectedFailsAtOnceUnknownToolsFailAndCallsTimeOut) {
  Fixture f;
  f.tools->add_tool({"lookup", "", "{}"}, "");
  auto offline = f.call("lookup");
  ASSERT_TRUE(*offline);
  EXPECT_TRUE((*offline)->is_error);
  EXPECT_EQ((*offline)->text, "The page is not connected");
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  EXPECT_TRUE((*f.call("nope"))->is_error);
  auto slow = f.call("lookup");
  f.ioc.restart();
  f.ioc.run_for(200ms);
  ASSERT_TRUE(*slow);
  EXPECT_TRUE((*slow)->is_error);
}

TEST(PageTools, ADroppedSocketFailsItsCallsAndANewOneReplacesTheOld) {
  Fixture f;
  f.tools->add_tool({"lookup", "", "{}"}, "");
  auto first = std::make_shared<Link>();
  f.tools->attach(first);
  auto slot = f.call("lookup");
  f.tools->detach(first.get());
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_TRUE(*slot);
  EXPECT_TRUE((*slot)->is_error);
  auto a = std::make_shared<Link>(), b = std::make_shared<Link>();
  f.tools->attach(a);
  f.tools->attach(b);
  EXPECT_TRUE(a->closed);
  f.tools->end();
  EXPECT_TRUE(b->closed);
  EXPECT_FALSE(f.tools->channel_token_valid(f.tools->channel_token()));
}

TEST(WebMcpCodec, RegisterAcceptsTheBlobOrTheInnerToken) {
  std::string blob = core::base64(R"({"server":"ws://127.0.0.1:1","token":"inner-secret"})");
  EXPECT_EQ(*web::parse_register(R"({"type":"register","token":")" + blob + "\"}"), "inner-secret");
  EXPECT_EQ(*web::parse_register(R"({"type":"register","token":"inner-secret"})"), "inner-secret");
  EXPECT_EQ(web::parse_register("{oops").error().message, "Invalid JSON");
  EXPECT_EQ(web::parse_register(R"({"type":"register","token":"a","token":"b"})").error().message, "Invalid JSON");
  EXPECT_EQ(web::parse_register(R"({"type":"hello"})").error().message, "Expected register message");
}

TEST(WebMcpCodec, PageMessages) {
  auto nested = web::parse_page_message(R"({"type":"registerTool","tool":{"name":"x","description":"d"}})");
  ASSERT_TRUE(std::holds_alternative<web::RegisterTool>(nested));
  auto& t = std::get<web::RegisterTool>(nested);
  EXPECT_EQ(t.spec.name, "x");
  EXPECT_EQ(json::parse(t.spec.input_schema_json), json::parse(R"({"type":"object","properties":{}})"));
  auto obj = web::parse_page_message(R"({"type":"toolResponse","id":"c1","result":{"a":1}})");
  EXPECT_EQ(std::get<web::PageResponse>(obj).answer.text, R"({"a":1})");
  auto str = web::parse_page_message(R"({"type":"toolResponse","id":"c1","result":"plain"})");
  EXPECT_EQ(std::get<web::PageResponse>(str).answer.text, "plain");
  auto err = web::parse_page_message(R"({"type":"toolResponse","id":"c1","error":{"message":"offline"}})");
  EXPECT_EQ(std::get<web::PageResponse>(err).answer.status, core::PageAnswer::Status::failed);
  EXPECT_EQ(std::get<web::PageResponse>(err).answer.text, "offline");
  EXPECT_TRUE(std::holds_alternative<web::Invalid>(web::parse_page_message(R"({"type":"launch"})")));
  EXPECT_EQ(json::parse(web::encode_call({core::PageCall::Kind::tool, "c1", "lookup", R"({"q":1})"})),
            json::parse(R"({"type":"callTool","id":"c1","tool":"lookup","arguments":{"q":1}})"));
}

TEST(WebMcpCodec, CallsAreBuiltAsTextWithTheArgumentsAsTheyCame) {
  using K = core::PageCall::Kind;
  // Arguments read() takes go out as they are; anything else (a model's broken JSON, nothing) as {}.
  EXPECT_EQ(web::encode_call({K::tool, "c2-x", "look\"up", "{ \"q\": [1, 2.50] }"}),
            R"({"type":"callTool","id":"c2-x","tool":"look\"up","arguments":{ "q": [1, 2.50] }})");
  for (const char* bad : {"", "{\"q\":", R"({"q":1,"q":2})", "{} {}", "\"\xff\""})
    EXPECT_EQ(json::parse(web::encode_call({K::tool, "c3", "t", bad})).at("arguments"), json::object{}) << bad;
  EXPECT_EQ(web::encode_call({K::resource, "c4", "page://a\nb", "ignored"}),
            R"({"type":"readResource","id":"c4","uri":"page://a\nb"})");
  EXPECT_EQ(json::parse(web::encode_call({K::prompt, "c5", "summary", R"({"lang":"fr"})"})),
            json::parse(R"({"type":"getPrompt","id":"c5","name":"summary","arguments":{"lang":"fr"}})"));
}
