// The page's tools: declarations, calls to the page, and the WebMCP codec.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "adapters/web/webmcp_channel.hpp"
#include "adapters/web/webmcp_codec.hpp"
#include "core/page_tools.hpp"
#include "core/session_book.hpp"
#include "core/random.hpp"
#include "json/read.hpp"
#include "mutate.hpp"

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
  // Claude names it mcp__webmcp__<name> and the Anthropic API takes at most 64 characters: 64 - 13.
  EXPECT_TRUE(core::valid_tool_name(std::string(51, 'a')));
  EXPECT_FALSE(core::valid_tool_name(std::string(52, 'a')));
  EXPECT_FALSE(core::valid_tool_name(std::string(64, 'a')));
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
  EXPECT_EQ((*slot)->text, "The page disconnected before it answered");
  auto a = std::make_shared<Link>(), b = std::make_shared<Link>();
  f.tools->attach(a);
  f.tools->attach(b);
  EXPECT_TRUE(a->closed);
  f.tools->end();
  EXPECT_TRUE(b->closed);
  EXPECT_FALSE(f.tools->channel_token_valid(f.tools->channel_token()));
}

namespace {
// Starts a call whose handler records its answers (it must run once).
std::shared_ptr<std::vector<core::PageAnswer>> start(core::PageTools& tools, std::string name = "lookup",
                                                     std::string tag = {}) {
  auto got = std::make_shared<std::vector<core::PageAnswer>>();
  tools.start(core::PageCall::Kind::tool, std::move(name), "{}", [got](core::PageAnswer a) { got->push_back(a); },
              std::move(tag));
  return got;
}
}  // namespace

TEST(PageTools, ACallsFailureSaysWhetherThePageWasAsked) {
  Fixture f;
  auto refused = start(*f.tools);
  ASSERT_EQ(refused->size(), 1u);
  EXPECT_EQ((*refused)[0].status, core::PageAnswer::Status::not_connected);  // never sent
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  auto sent = start(*f.tools);
  f.tools->detach(link.get());
  ASSERT_EQ(sent->size(), 1u);
  EXPECT_EQ((*sent)[0].status, core::PageAnswer::Status::dropped);  // sent, and the page went away
  f.tools->attach(link);
  auto at_end = start(*f.tools);
  f.tools->end();
  ASSERT_EQ(at_end->size(), 1u);
  EXPECT_EQ((*at_end)[0].status, core::PageAnswer::Status::ended);
}

TEST(PageTools, TheTimeoutIsSaidExactly) {
  EXPECT_EQ(core::duration_in_words(600'000ms), "10 minutes");
  EXPECT_EQ(core::duration_in_words(60'000ms), "1 minute");
  EXPECT_EQ(core::duration_in_words(90'000ms), "90 seconds");
  EXPECT_EQ(core::duration_in_words(1000ms), "1 second");
  EXPECT_EQ(core::duration_in_words(600ms), "600 milliseconds");
}

TEST(PageTools, TheAnswerHandlerRunsAsTheAnswerIsReadAndOnlyOnce) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  auto got = start(*f.tools);
  ASSERT_EQ(link->calls.size(), 1u);
  EXPECT_TRUE(got->empty());
  f.tools->answer(link->calls[0].id, {core::PageAnswer::Status::answered, "found", "\"found\""});
  ASSERT_EQ(got->size(), 1u);  // no run of the io_context between the answer and its handler
  EXPECT_EQ((*got)[0].text, "found");
  f.tools->answer(link->calls[0].id, {core::PageAnswer::Status::answered, "again", "\"again\""});
  f.tools->answer("c999-unknown", {core::PageAnswer::Status::answered, "stray", "\"stray\""});
  f.tools->detach(link.get());
  f.tools->end();
  f.ioc.run_for(150ms);
  EXPECT_EQ(got->size(), 1u);
}

TEST(PageTools, CallsTimeOutInTheirOrderOnOneTimer) {
  asio::io_context ioc;  // 1 s per call; margins of 200 ms or more either side of each deadline
  auto tools = std::make_shared<core::PageTools>(ioc.get_executor(), 1000ms);
  auto link = std::make_shared<Link>();
  tools->attach(link);
  auto first = start(*tools);
  ioc.run_for(500ms);
  auto second = start(*tools);
  auto third = start(*tools);
  tools->answer(link->calls[2].id, {core::PageAnswer::Status::answered, "on time", "\"on time\""});
  ioc.restart();
  ioc.run_for(700ms);  // 1.2 s: the first is over its time, the second (1.5 s) is not
  ASSERT_EQ(first->size(), 1u);
  EXPECT_EQ((*first)[0].status, core::PageAnswer::Status::timed_out);
  EXPECT_EQ((*first)[0].text, "The page did not answer within 1 second");
  EXPECT_TRUE(second->empty());
  ioc.restart();
  ioc.run_for(600ms);
  ASSERT_EQ(second->size(), 1u);
  EXPECT_EQ((*second)[0].status, core::PageAnswer::Status::timed_out);
  ASSERT_EQ(third->size(), 1u);
  EXPECT_EQ((*third)[0].text, "on time");
  // A late answer to a call that timed out is ignored; a call made when none waits gets the timer again.
  tools->answer(link->calls[0].id, {core::PageAnswer::Status::answered, "late", "\"late\""});
  EXPECT_EQ(first->size(), 1u);
  auto fourth = start(*tools);
  ioc.restart();
  ioc.run_for(1300ms);
  ASSERT_EQ(fourth->size(), 1u);
  EXPECT_EQ((*fourth)[0].status, core::PageAnswer::Status::timed_out);
}

TEST(PageTools, AtMost64CallsWaitAndTheSessionsEndFailsThemAtOnce) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  std::vector<std::shared_ptr<std::vector<core::PageAnswer>>> waiting;
  for (std::size_t i = 0; i < core::kMaxPendingCalls; ++i) waiting.push_back(start(*f.tools));
  auto refused = start(*f.tools);
  ASSERT_EQ(refused->size(), 1u);  // before start() returned
  EXPECT_EQ((*refused)[0].text, "Too many calls are waiting for the page");
  EXPECT_EQ((*refused)[0].status, core::PageAnswer::Status::busy);  // never reached the page: not the tool's failure
  EXPECT_EQ(link->calls.size(), core::kMaxPendingCalls);
  f.tools->end();
  for (auto& w : waiting) {
    ASSERT_EQ(w->size(), 1u);
    EXPECT_EQ((*w)[0].status, core::PageAnswer::Status::ended);
  }
  auto after = start(*f.tools);
  ASSERT_EQ(after->size(), 1u);
  EXPECT_EQ((*after)[0].status, core::PageAnswer::Status::ended);
}

// An ended session stays readable for minutes; what its page declared (up to 48 MB) need not.
TEST(PageTools, TheSessionsEndForgetsWhatThePageDeclared) {
  Fixture f;
  ASSERT_TRUE(f.tools->add_tool({"lookup", "", "{}"}, ""));
  ASSERT_TRUE(f.tools->add_resource({"page://a", "a", "", "text/plain"}));
  f.tools->end();
  EXPECT_TRUE(f.tools->declared_tools().empty());
  EXPECT_TRUE(f.tools->resources().empty());
  EXPECT_FALSE(f.tools->add_tool({"later", "", "{}"}, ""));
  EXPECT_FALSE(f.tools->add_resource({"page://b", "b", "", "text/plain"}));
  EXPECT_TRUE(f.tools->declared_tools().empty());
}

// An MCP client's stream of changes ends with the session: its listener hears the end once, then nothing.
TEST(PageTools, ListenersHearEachChangeAndTheSessionsEndOnce) {
  Fixture f;
  int heard = 0;
  f.tools->on_tools_changed([&heard] {
    ++heard;
    return true;
  });
  ASSERT_TRUE(f.tools->add_tool({"lookup", "", "{}"}, ""));
  f.tools->remove_tool("lookup");
  f.tools->remove_tool("lookup");  // no change
  EXPECT_EQ(heard, 2);
  f.tools->end();
  EXPECT_EQ(heard, 3);
  EXPECT_TRUE(f.tools->declared_tools().empty());  // what it finds when it hears the end
  f.tools->end();
  EXPECT_FALSE(f.tools->add_tool({"later", "", "{}"}, ""));
  EXPECT_EQ(heard, 3);
}

// A caller that gives up on a call (an MCP client's cancel, or its connection gone) ends it at once and
// frees its place among the 64; the page's late answer is dropped, as a timed-out call's is.
TEST(PageTools, ACancelledCallEndsAtOnceAndFreesItsPlace) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  std::vector<std::shared_ptr<std::vector<core::PageAnswer>>> waiting;
  for (std::size_t i = 0; i < core::kMaxPendingCalls; ++i)
    waiting.push_back(start(*f.tools, "lookup", "agent\n" + std::to_string(i)));
  EXPECT_EQ((*start(*f.tools))[0].text, "Too many calls are waiting for the page");
  EXPECT_FALSE(f.tools->cancel("agent\n999"));
  EXPECT_FALSE(f.tools->cancel(""));  // an untagged call is never cancelled by tag
  EXPECT_TRUE(f.tools->cancel("agent\n7"));
  ASSERT_EQ(waiting[7]->size(), 1u);
  EXPECT_EQ((*waiting[7])[0].status, core::PageAnswer::Status::cancelled);
  EXPECT_FALSE(f.tools->cancel("agent\n7"));  // once
  auto next = start(*f.tools);
  EXPECT_TRUE(next->empty()) << "the freed place is taken";
  f.tools->answer(link->calls[7].id, {core::PageAnswer::Status::answered, "late", "\"late\""});
  EXPECT_EQ(waiting[7]->size(), 1u);  // the late answer went nowhere
  f.tools->answer(link->calls[8].id, {core::PageAnswer::Status::answered, "ok", "\"ok\""});
  ASSERT_EQ(waiting[8]->size(), 1u);
  EXPECT_EQ((*waiting[8])[0].status, core::PageAnswer::Status::answered);
}

// A cancel may overtake its call (mcp-stdio forwards each line on its own request): the call then ends
// as it starts. A client gone ends its own call by the id start() gave, never another client's with
// the same tag.
TEST(PageTools, ACancelThatCameFirstEndsItsCallAsItStartsAndAGoneClientEndsOnlyItsOwn) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  EXPECT_FALSE(f.tools->cancel("\n3"));
  auto overtaken = start(*f.tools, "lookup", "\n3");
  ASSERT_EQ(overtaken->size(), 1u);
  EXPECT_EQ((*overtaken)[0].status, core::PageAnswer::Status::cancelled);
  EXPECT_TRUE(link->calls.empty()) << "the page is never asked";
  auto again = start(*f.tools, "lookup", "\n3");  // remembered once
  EXPECT_TRUE(again->empty());
  auto other = start(*f.tools, "lookup", "\n3");
  ASSERT_EQ(link->calls.size(), 2u);
  EXPECT_TRUE(f.tools->cancel_call(link->calls[1].id));
  EXPECT_TRUE(again->empty()) << "the first call with that tag waits on";
  ASSERT_EQ(other->size(), 1u);
  EXPECT_FALSE(f.tools->cancel_call(""));
  EXPECT_FALSE(f.tools->cancel_call(link->calls[1].id));
}

// A cancelled turn of the engine's own tool loop ends the page calls it waits on, and only those.
// The visitor stopped the turn: the engine's own tool loop stops waiting (cancelled), and the agent's
// call over MCP ends as a failed call it reads, so that an agent that doesn't abort its own call still
// ends its turn now, not at the cancel's grace.
TEST(PageTools, CancelCallsEndsEveryCallOfTheTurn) {
  Fixture f;
  auto link = std::make_shared<Link>();
  f.tools->attach(link);
  ASSERT_TRUE(f.tools->add_tool({"lookup", "", "{}"}, ""));
  auto agents = start(*f.tools, "lookup", "\n1");
  auto slot = f.call("lookup");
  ASSERT_EQ(link->calls.size(), 2u);
  f.tools->cancel_calls();
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_TRUE(*slot);
  EXPECT_TRUE((*slot)->is_error);
  EXPECT_EQ((*slot)->text, "The call was cancelled");
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ(agents->front().status, core::PageAnswer::Status::failed);
  EXPECT_EQ(agents->front().text, "The visitor stopped the turn before the page answered");
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

namespace {
// The fast reading of a page's message against the tree's: the same kind, id, status and text; the
// result's JSON the same value (the fast one keeps the page's spelling of it: spaces, 1.50).
void expect_same_reading(const std::string& text) {
  const web::PageMessage fast = web::parse_page_message(text), tree = web::parse_page_message_tree(text);
  ASSERT_EQ(fast.index(), tree.index()) << text;
  if (auto* i = std::get_if<web::Invalid>(&tree)) {
    EXPECT_EQ(std::get<web::Invalid>(fast).message, i->message) << text;
  }
  auto* t = std::get_if<web::PageResponse>(&tree);
  if (!t) return;
  auto& f = std::get<web::PageResponse>(fast);
  EXPECT_EQ(f.id, t->id) << text;
  EXPECT_EQ(f.answer.status, t->answer.status) << text;
  if (t->answer.status != core::PageAnswer::Status::answered) {
    EXPECT_EQ(f.answer.text, t->answer.text) << text;
    return;
  }
  auto fj = jsonio::read(f.answer.json), tj = jsonio::read(t->answer.json);
  ASSERT_TRUE(fj && tj) << text;
  EXPECT_EQ(*fj, *tj) << text;
  if (t->answer.text == t->answer.json) {
    EXPECT_EQ(f.answer.text, f.answer.json) << text;
  } else {
    EXPECT_EQ(f.answer.text, t->answer.text) << text;
  }
}
}  // namespace

TEST(WebMcpCodec, AnswersAndPingsAreReadWithoutATreeAsTheTreeReadsThem) {
  const std::vector<std::string> seeds = {
      R"({"type":"ping"})", R"({"type":"pong"})", R"({"type":"toolResponse","id":"c1-ab","result":"plain"})",
      R"({ "result" : { "a" : [1, 2.50, "x}]\"y"] } , "id":"c2", "type":"toolResponse" })",
      R"({"type":"resourceResponse","id":"c3","result":[{"uri":"page://a","text":"t"}]})",
      R"({"type":"promptResponse","id":"c4","result":-1.5e3})", R"({"type":"toolResponse","id":"c5","result":null})",
      R"({"type":"toolResponse","id":"c6"})", R"({"type":"toolResponse","id":"c7","result":true,"error":null})",
      R"({"type":"toolResponse","id":"c8","error":"offline"})", R"({"type":"toolResponse","result":1})",
      R"({"type":"toolResponse","id":"c9","re\u0073ult":{"k":"v"}})", R"({"\u0074ype":"toolResponse","id":"c9","result":{}})",
      R"({"type":"toolResponse","id":"c10","result":"caf\u00e9 \"q\""})", R"({"type":"registerTool","name":"x"})",
      R"({"type":"launch"})", R"({"id":"c11"})", R"([{"type":"ping"}])", R"({"type":"ping","type":"pong"})"};
  for (const auto& s : seeds) expect_same_reading(s);
  EXPECT_EQ(std::get<web::PageResponse>(web::parse_page_message(seeds[3])).answer.json,
            R"({ "a" : [1, 2.50, "x}]\"y"] })");
  std::mt19937 rng(20261201);
  const std::string alphabet = "{}[]:,\"\\ 0123456789.eE+-tfnulx\xc3\xa9\xff";
  const std::vector<std::string> words = {"true", "null", "\"a\"", "[[[", "]]]", "\"result\":", "\"error\":1,", "\\u00", ",\"id\":\"c\""};
  for (int n = 0; n < 20000; ++n) {
    const std::string s = mutation::mutate(seeds[rng() % seeds.size()], rng, alphabet, words);
    SCOPED_TRACE("mutation " + std::to_string(n));
    expect_same_reading(s);
    if (HasFatalFailure()) return;
  }
}

namespace {
web::PageMessage register_tool(const std::string& members) {
  return web::parse_page_message(R"({"type":"registerTool","name":"search")" + members + "}");
}
std::string refusal(const web::PageMessage& m) {
  auto* i = std::get_if<web::Invalid>(&m);
  return i ? i->message : "(accepted)";
}
}  // namespace

// MCP SDK clients check the whole tools/list answer: one tool they reject hides all of the page's
// tools. So a schema is made whole (no type: "object") or refused, never passed on as it came.
TEST(WebMcpCodec, AToolsSchemaIsMadeAnObjectSchemaOrRefused) {
  auto schema = [](const std::string& members) {
    auto m = register_tool(members);
    EXPECT_TRUE(std::holds_alternative<web::RegisterTool>(m)) << members << ": " << refusal(m);
    return std::holds_alternative<web::RegisterTool>(m) ? json::parse(std::get<web::RegisterTool>(m).spec.input_schema_json)
                                                        : json::value();
  };
  EXPECT_EQ(schema(R"(,"inputSchema":{})"), json::parse(R"({"type":"object"})"));
  EXPECT_EQ(schema(R"(,"inputSchema":{"properties":{"q":{"type":"string"}},"required":["q"]})"),
            json::parse(R"({"type":"object","properties":{"q":{"type":"string"}},"required":["q"]})"));
  EXPECT_EQ(schema(R"(,"inputSchema":null)"), json::parse(R"({"type":"object","properties":{}})"));
  EXPECT_EQ(schema(""), json::parse(R"({"type":"object","properties":{}})"));
  const std::string kept = R"({"type":"object","properties":{"q":{}},"additionalProperties":false,"$defs":{"a":1}})";
  EXPECT_EQ(schema(R"(,"inputSchema":)" + kept), json::parse(kept));

  for (const char* bad : {R"("string")", "[]", "42", "true"})
    EXPECT_EQ(refusal(register_tool(std::string(R"(,"inputSchema":)") + bad)), "inputSchema must be an object schema") << bad;
  for (const char* bad : {R"({"type":"string"})", R"({"type":["object","null"]})", R"({"type":null})"})
    EXPECT_EQ(refusal(register_tool(std::string(R"(,"inputSchema":)") + bad)),
              R"(inputSchema must be an object schema: its type must be "object")")
        << bad;
  for (const char* bad : {R"({"properties":[]})", R"({"type":"object","properties":"q"})",
                          R"({"type":"object","properties":{"q":"string"}})", R"({"properties":{"q":true}})"})
    EXPECT_EQ(refusal(register_tool(std::string(R"(,"inputSchema":)") + bad)),
              "inputSchema properties must be an object whose values are schemas (objects)")
        << bad;
  for (const char* bad : {R"({"required":"q"})", R"({"type":"object","required":[1]})"})
    EXPECT_EQ(refusal(register_tool(std::string(R"(,"inputSchema":)") + bad)),
              "inputSchema required must be an array of property names")
        << bad;
  // nested too, and the fast reading sends a registration to the tree
  EXPECT_EQ(refusal(web::parse_page_message(R"({"type":"registerTool","tool":{"name":"s","inputSchema":{"type":"array"}}})")),
            R"(inputSchema must be an object schema: its type must be "object")");
}

TEST(WebMcpCodec, AnnotationsAndPromptArgumentsKeepOnlyWhatMcpDefines) {
  auto ann = [](const std::string& a) {
    return std::get<web::RegisterTool>(register_tool(R"(,"annotations":)" + a)).annotations_json;
  };
  EXPECT_EQ(json::parse(ann(R"({"title":"Search","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})")),
            json::parse(R"({"title":"Search","readOnlyHint":true,"destructiveHint":false,"idempotentHint":true,"openWorldHint":false})"));
  EXPECT_EQ(json::parse(ann(R"({"readOnlyHint":"yes","destructiveHint":1,"title":7,"idempotentHint":true,"x":{"y":1}})")),
            json::parse(R"({"idempotentHint":true})"));
  EXPECT_EQ(ann(R"({"readOnlyHint":"true","custom":1})"), "");  // nothing left: no annotations
  EXPECT_EQ(ann("[1]"), "");

  auto args = [](const std::string& a) {
    auto m = web::parse_page_message(R"({"type":"registerPrompt","name":"p","arguments":)" + a + "}");
    return std::get<web::RegisterPrompt>(m).spec.arguments_json;
  };
  EXPECT_EQ(json::parse(args(R"([{"name":"topic","description":"What","required":true}])")),
            json::parse(R"([{"name":"topic","description":"What","required":true}])"));
  EXPECT_EQ(json::parse(args(R"([{"name":"a","description":3,"required":"yes","x":1},{"description":"no name"},{"name":5},"b",null])")),
            json::parse(R"([{"name":"a"}])"));
}

// An in-process model's arguments that are no JSON object go back to it as the call's error, and the
// page is not asked (it would have run the tool with {}).
TEST(WebMcpCodec, ArgumentsThatAreNoJsonObjectAreRefusedInWordsForTheModel) {
  for (const char* ok : {"{}", R"( {"q":[1,2.5]} )", "\n{\"q\":\"x\"}"}) EXPECT_FALSE(web::arguments_refusal(ok)) << ok;
  for (const char* bad : {R"({"q":)", R"({'q':1})", R"({"q":1,"q":2})", "{} {}", "", "\"\xff\""}) {
    auto why = web::arguments_refusal(bad);
    ASSERT_TRUE(why) << bad;
    EXPECT_TRUE(why->starts_with("Your arguments were not valid JSON: ")) << *why;
    EXPECT_TRUE(why->ends_with("Call the tool again with its arguments as one JSON object.")) << *why;
  }
  for (const char* bad : {"[1]", R"("{\"q\":1}")", "null", "3"})
    EXPECT_EQ(web::arguments_refusal(bad),
              "Your arguments were not a JSON object. Call the tool again with its arguments as one JSON object.")
        << bad;
}

namespace {
struct RefusingLink final : core::PageLink {
  std::vector<core::PageCall> calls;
  void send_call(const core::PageCall& c) override { calls.push_back(c); }
  void close() override {}
  std::optional<std::string> refuse_arguments(std::string_view a) const override { return web::arguments_refusal(a); }
};
}  // namespace

TEST(PageTools, AnInProcessCallWithArgumentsTheLinkRefusesFailsWithoutAskingThePage) {
  Fixture f;
  auto link = std::make_shared<RefusingLink>();
  f.tools->attach(link);
  ASSERT_TRUE(f.tools->add_tool({"lookup", "", "{}"}, ""));
  std::optional<core::ToolResult> result;
  asio::co_spawn(f.ioc, f.tools->call("lookup", R"({"q": "x)"), [&](std::exception_ptr, core::ToolResult r) { result = r; });
  f.ioc.run_for(100ms);
  ASSERT_TRUE(result);
  EXPECT_TRUE(result->is_error);
  EXPECT_TRUE(result->text.starts_with("Your arguments were not valid JSON")) << result->text;
  EXPECT_TRUE(link->calls.empty());
  // good arguments still go
  f.call("lookup");
  ASSERT_EQ(link->calls.size(), 1u);
  EXPECT_EQ(link->calls[0].arguments_json, "{}");
}

TEST(WebMcpCodec, CallsAreBuiltAsTextWithTheArgumentsAsTheyCame) {
  using K = core::PageCall::Kind;
  // Arguments read() takes go out as they are; anything else as {}, a last guard only: MCP's arguments
  // are objects already, and a model's broken ones are refused before the call starts (arguments_refusal).
  EXPECT_EQ(web::encode_call({K::tool, "c2-x", "look\"up", "{ \"q\": [1, 2.50] }"}),
            R"({"type":"callTool","id":"c2-x","tool":"look\"up","arguments":{ "q": [1, 2.50] }})");
  for (const char* bad : {"", "{\"q\":", R"({"q":1,"q":2})", "{} {}", "\"\xff\""})
    EXPECT_EQ(json::parse(web::encode_call({K::tool, "c3", "t", bad})).at("arguments"), json::object{}) << bad;
  EXPECT_EQ(web::encode_call({K::resource, "c4", "page://a\nb", "ignored"}),
            R"({"type":"readResource","id":"c4","uri":"page://a\nb"})");
  EXPECT_EQ(json::parse(web::encode_call({K::prompt, "c5", "summary", R"({"lang":"fr"})"})),
            json::parse(R"({"type":"getPrompt","id":"c5","name":"summary","arguments":{"lang":"fr"}})"));
}

// The tool channel over a socket whose writes fail at once while its read waits: the writer finishes
// first (its failed write closes the socket, which ends the read), and the channel must still end,
// not wait at the end of time for a writer already gone (holding the link, the socket and the session).
namespace {

struct IdleBackend final : core::AgentBackend {
  asio::awaitable<boost::system::result<void, std::string>> start(core::BackendConfig) override {
    co_return boost::system::result<void, std::string>{};
  }
  bool accepts_images() const override { return false; }
  asio::awaitable<core::TurnOutcome> prompt(std::vector<core::PromptBlock>) override { co_return core::TurnOutcome{}; }
  void cancel_turn() override {}
  void shutdown() override {}
};

struct IdleFactory final : core::BackendFactory {
  boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> make(const core::AiChoice&, core::BackendSink&,
                                                                              std::shared_ptr<core::ToolRegistry>) override {
    return std::shared_ptr<core::AgentBackend>(std::make_shared<IdleBackend>());
  }
};

// Writes fail at once; a read waits until the socket is closed.
struct BrokenWriteSocket final : http::WebSocket {
  explicit BrokenWriteSocket(asio::any_io_executor ex) : closed(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer closed;
  bool is_closed = false;
  int writes = 0;
  asio::awaitable<std::optional<std::string>> read() override {
    if (!is_closed) co_await closed.async_wait(asio::as_tuple(asio::use_awaitable));
    co_return std::nullopt;
  }
  asio::awaitable<bool> write(std::string) override {
    ++writes;
    co_return false;
  }
  asio::awaitable<void> close() override {
    is_closed = true;
    closed.cancel();
    co_return;
  }
};

}  // namespace

TEST(WebMcpChannel, EndsWhenItsWriterFinishesBeforeItsReader) {
  asio::io_context ioc;
  IdleFactory factory;
  core::SessionBook book(ioc.get_executor(), factory, core::SessionLimits{}, "");
  auto session = book.prepare("https://a.example", core::AiChoice{"x", {}}, core::PrepareRequest{});
  ASSERT_TRUE(session);
  BrokenWriteSocket ws(ioc.get_executor());
  // A ping every millisecond: the writer's first message, whose write fails.
  auto link = std::make_shared<web::PageSocketLink>(ioc.get_executor(), 1ms);
  bool ended = false;
  asio::co_spawn(ioc, link->run(ws, *session), [&](std::exception_ptr) { ended = true; });
  ioc.run_for(500ms);
  EXPECT_GE(ws.writes, 1);
  EXPECT_TRUE(ws.is_closed);
  EXPECT_TRUE(ended) << "the channel waits forever for a writer that is done";
  EXPECT_FALSE((*session)->page_tools().connected());
  (*session)->end(core::SessionStatus::cancelled);
  ioc.run_for(50ms);
}
