// `leuria mcp-stdio`'s rules for what it writes back (app/mcp_bridge.cpp): only whole JSON-RPC messages,
// one a line, and exactly one reply to each request, whatever the engine's answer was.
#include <gtest/gtest.h>

#include <boost/json.hpp>
#include <string>

#include "app/mcp_bridge.hpp"

using namespace leuria;

namespace {

const std::string kSse = "text/event-stream";

http::ClientResult answered(unsigned status, std::string content_type, bool complete = true) {
  http::ClientResult r;
  r.status = status;
  r.content_type = std::move(content_type);
  r.complete = complete;
  return r;
}

http::ClientResult failed(http::Failure kind, std::string why, unsigned status = 0) {
  http::ClientResult r;
  r.status = status;
  r.failure = kind;
  r.error = std::move(why);
  return r;
}

std::string event(const std::string& data) { return "event: message\ndata: " + data + "\n\n"; }

boost::json::object parsed(const std::string& line) { return boost::json::parse(line).as_object(); }

const std::string kPing = R"({"jsonrpc":"2.0","id":7,"method":"ping"})";
const std::string kPong = R"({"jsonrpc":"2.0","id":7,"result":{}})";
const std::string kProgress = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})";

}  // namespace

TEST(SseEventData, WholeEventsOnlyWithTheirDataLinesJoined) {
  EXPECT_EQ(app::sse_event_data(": keep-alive\n\nevent: message\ndata: a\n\n"), std::vector<std::string>{"a"});
  EXPECT_EQ(app::sse_event_data("data: one\ndata:two\r\n\r\ndata: 3\rid: 9\r\r"),
            (std::vector<std::string>{"one\ntwo", "3"}));
  EXPECT_EQ(app::sse_event_data("data: whole\n\ndata: {\"cut"), std::vector<std::string>{"whole"});
  EXPECT_EQ(app::sse_event_data("data: no blank line after it\n"), std::vector<std::string>{"no blank line after it"});
  EXPECT_EQ(app::sse_event_data("data: {\"a\":\ndata: 1"), std::vector<std::string>{"{\"a\":"});  // not JSON: dropped later
  EXPECT_EQ(app::sse_event_data("retry: 10\nid: 1\n\ndata\n\n"), std::vector<std::string>{""});
}

// The GET stream is read piece by piece: the same events whatever the pieces' boundaries, a CRLF split
// between two pieces included.
TEST(SseEvents, PiecesSplitAnywhereGiveTheSameEvents) {
  const std::string stream = ":\n\nevent: message\r\ndata: {\"a\":1}\r\n\r\ndata: one\rdata: two\r\rid: 3\ndata: last\n\n";
  const std::vector<std::string> whole{"{\"a\":1}", "one\ntwo", "last"};
  for (std::size_t cut = 0; cut <= stream.size(); ++cut) {
    for (std::size_t cut2 = cut; cut2 <= stream.size(); cut2 += 7) {
      app::SseEvents reader;
      std::vector<std::string> got;
      for (auto piece : {stream.substr(0, cut), stream.substr(cut, cut2 - cut), stream.substr(cut2)})
        for (auto& e : reader.feed(piece)) got.push_back(e);
      EXPECT_EQ(got, whole) << "cut at " << cut << " and " << cut2;
      EXPECT_FALSE(reader.finish());
    }
  }
  app::SseEvents byte_by_byte;
  std::vector<std::string> got;
  for (char c : stream)
    for (auto& e : byte_by_byte.feed(std::string(1, c))) got.push_back(e);
  EXPECT_EQ(got, whole);
}

TEST(SseEvents, AnEventWithoutItsBlankLineCountsOnlyAtTheEnd) {
  app::SseEvents reader;
  EXPECT_TRUE(reader.feed("data: a\n").empty());
  EXPECT_EQ(reader.finish(), std::optional<std::string>("a"));
  app::SseEvents cut;
  EXPECT_TRUE(cut.feed("data: {\"cut").empty());
  EXPECT_FALSE(cut.finish());  // a line the stream ended inside is not whole
}

// Bounded: a line, or an event's data, past the bound is not kept, and nothing after it is read.
TEST(SseEvents, PastItsBoundItKeepsNothingAndSaysSo) {
  app::SseEvents line(16);
  EXPECT_TRUE(line.feed("data: 0123456789").empty());
  EXPECT_FALSE(line.overflowed());
  EXPECT_TRUE(line.feed("abcdef").empty());
  EXPECT_TRUE(line.overflowed());
  EXPECT_TRUE(line.feed("\n\ndata: x\n\n").empty());
  EXPECT_FALSE(line.finish());
  app::SseEvents data(16);
  EXPECT_TRUE(data.feed("data: 0123456789\ndata: 0123456789\n\n").empty());
  EXPECT_TRUE(data.overflowed());
}

TEST(MessageLine, WholeJsonRpcMessagesOnlyEachOnOneLine) {
  EXPECT_EQ(app::message_line(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"),
            std::optional<std::string>(R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"));
  EXPECT_EQ(app::message_line("{\"jsonrpc\":\"2.0\",\n\"method\":\"x\"}"),
            std::optional<std::string>(R"({"jsonrpc":"2.0","method":"x"})"));
  EXPECT_FALSE(app::message_line(R"({"jsonrpc":"2.0","method":"x")"));  // cut short
  EXPECT_FALSE(app::message_line(R"({"error":"bad token"})"));         // not JSON-RPC
  EXPECT_FALSE(app::message_line("keep-alive"));
}

TEST(MessageMethod, ARequestsOrANotificationsMethodElseNothing) {
  EXPECT_EQ(app::message_method(R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{}})"), "initialize");
  EXPECT_EQ(app::message_method(R"({"jsonrpc":"2.0","method":"notifications/initialized"})"), "notifications/initialized");
  EXPECT_EQ(app::message_method(R"({"jsonrpc":"2.0","id":1,"result":{}})"), "");
  EXPECT_EQ(app::message_method(R"({"jsonrpc":"2.0","id":1,"method":7})"), "");
  EXPECT_EQ(app::message_method("[]"), "");
  EXPECT_EQ(app::message_method("not json"), "");
}

TEST(BridgeReply, AWholeAnswerGoesOnAsItCameWithNothingAdded) {
  auto r = app::bridge_reply(kPing, answered(200, kSse), event(kProgress) + event(kPong));
  EXPECT_EQ(r.lines, (std::vector<std::string>{kProgress, kPong}));
  EXPECT_FALSE(r.trouble);
  auto json = app::bridge_reply(kPing, answered(200, "application/json"), "\n\n" + kPong + "\n");
  EXPECT_EQ(json.lines, std::vector<std::string>{kPong});  // the keep-alive's blank lines are not a message
}

TEST(BridgeReply, AnAnswerCutInsideItsReplyGivesTheWholeMessagesThenAnError) {
  auto cut = failed(http::Failure::broke_off, "partial message", 200);
  cut.content_type = kSse;
  const std::string body = event(kProgress) + "event: message\ndata: " + kPong.substr(0, 20);
  auto r = app::bridge_reply(kPing, cut, body);
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0], kProgress);
  auto err = parsed(r.lines[1]);
  EXPECT_EQ(err.at("id"), 7);
  EXPECT_EQ(err.at("error").at("code"), -32000);
  EXPECT_EQ(err.at("error").at("message"), "The engine's answer broke off (partial message).");
  EXPECT_EQ(r.trouble, "The engine's answer broke off (partial message).");
}

TEST(BridgeReply, AReplyThatCameWholeBeforeTheBreakIsTheOnlyReply) {
  auto cut = failed(http::Failure::broke_off, "end of stream", 200);
  cut.content_type = kSse;
  auto r = app::bridge_reply(kPing, cut, event(kPong) + ": ");
  EXPECT_EQ(r.lines, std::vector<std::string>{kPong});
  EXPECT_TRUE(r.trouble);  // still said on stderr
}

TEST(BridgeReply, AJsonBodyCutShortIsNotPassedOn) {
  auto cut = failed(http::Failure::broke_off, "partial message", 200);
  cut.content_type = "application/json";
  auto r = app::bridge_reply(kPing, cut, kPong.substr(0, kPong.size() - 3));
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(parsed(r.lines[0]).at("error").at("message"), "The engine's answer broke off (partial message).");
}

TEST(BridgeReply, IdsCompareAsValues) {
  const std::string as_double = R"({"jsonrpc":"2.0","id":7.0,"method":"ping"})";
  auto same = app::bridge_reply(as_double, answered(200, "application/json"), kPong);
  EXPECT_EQ(same.lines, std::vector<std::string>{kPong});  // 7 answers 7.0: no second reply
  const std::string as_string = R"({"jsonrpc":"2.0","id":"7","method":"ping"})";
  auto other = app::bridge_reply(as_string, answered(200, "application/json"), kPong);
  ASSERT_EQ(other.lines.size(), 2u);  // 7 does not answer "7"
  EXPECT_EQ(parsed(other.lines[1]).at("id"), "7");
  EXPECT_EQ(parsed(other.lines[1]).at("error").at("message"), "The engine's answer held no reply.");
}

TEST(BridgeReply, TheEnginesOwnErrorInARefusalIsTheReply) {
  auto refused = answered(400, "application/json");
  refused.body = R"({"jsonrpc":"2.0","id":7,"error":{"code":-32600,"message":"Invalid request"}})";
  auto r = app::bridge_reply(kPing, refused, "");
  EXPECT_EQ(r.lines, std::vector<std::string>{refused.body});
}

TEST(BridgeReply, ARefusalThatIsNotJsonRpcGetsAnErrorSayingSo) {
  auto refused = answered(401, "application/json");
  refused.body = R"({"error":"Unknown channel token"})";
  auto r = app::bridge_reply(kPing, refused, "");
  ASSERT_EQ(r.lines.size(), 1u);  // the error page's JSON is not passed on
  EXPECT_EQ(parsed(r.lines[0]).at("error").at("message"), "The engine refused the request (HTTP 401).");
}

TEST(BridgeReply, EachWayOfNotAnsweringIsSaidInItsOwnWords) {
  auto say = [](const http::ClientResult& res) {
    auto r = app::bridge_reply(kPing, res, "");
    EXPECT_EQ(r.lines.size(), 1u);
    return std::string(parsed(r.lines.at(0)).at("error").at("message").as_string());
  };
  EXPECT_EQ(say(failed(http::Failure::unreachable, "Could not connect to http://127.0.0.1:9/x: Connection refused")),
            "Could not reach the engine (Could not connect to http://127.0.0.1:9/x: Connection refused).");
  EXPECT_EQ(say(failed(http::Failure::no_answer, "No answer: end of stream")),
            "The engine did not answer (No answer: end of stream).");
  EXPECT_EQ(say(answered(202, "")), "The engine's answer held no reply.");
}

TEST(BridgeReply, ANotificationGetsWhatTheEngineSentAndNothingMore) {
  auto r = app::bridge_reply(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", answered(202, ""), "");
  EXPECT_TRUE(r.lines.empty());
  EXPECT_FALSE(r.trouble);
  auto lost = app::bridge_reply(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                failed(http::Failure::unreachable, "Could not connect"), "");
  EXPECT_TRUE(lost.lines.empty());
  EXPECT_TRUE(lost.trouble);
}

TEST(BridgeReply, ALineThatIsNotOneMessageGetsTheEnginesErrorOrANullIdOne) {
  const std::string batch = "[" + kPing + "]";
  auto refused = answered(400, "application/json");
  refused.body = R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Send one JSON-RPC message per request"}})";
  EXPECT_EQ(app::bridge_reply(batch, refused, "").lines, std::vector<std::string>{refused.body});
  auto r = app::bridge_reply("{not json", failed(http::Failure::unreachable, "Could not connect"), "");
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_TRUE(parsed(r.lines[0]).at("id").is_null());
}

TEST(BridgeReply, ALineBreakInsideAnEventsDataIsWrittenAsOneLine) {
  auto r = app::bridge_reply(kPing, answered(200, kSse), "data: {\"jsonrpc\":\"2.0\",\ndata: \"id\":7,\"result\":{}}\n\n");
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(r.lines[0].find('\n'), std::string::npos);
  EXPECT_EQ(parsed(r.lines[0]), parsed(kPong));
}

TEST(BridgeReply, AReplyDeeperThanJsonioReadsIsStillTheReply) {
  std::string deep = "1";
  for (int i = 0; i < 100; ++i) deep = "[" + deep + "]";
  const std::string reply = R"({"jsonrpc":"2.0","id":7,"result":{"structuredContent":)" + deep + "}}";
  auto r = app::bridge_reply(kPing, answered(200, kSse), event(reply));
  EXPECT_EQ(r.lines, std::vector<std::string>{reply});
}

TEST(BridgeReply, ARequestOfTheServersWithTheSameIdIsNotTheReply) {
  // The answer's stream may carry a request of the server's to the agent; its id is in another space.
  const std::string asks = R"({"jsonrpc":"2.0","id":7,"method":"sampling/createMessage","params":{}})";
  auto cut = failed(http::Failure::broke_off, "end of stream", 200);
  cut.content_type = kSse;
  auto r = app::bridge_reply(kPing, cut, event(asks));
  ASSERT_EQ(r.lines.size(), 2u);
  EXPECT_EQ(r.lines[0], asks);
  EXPECT_EQ(parsed(r.lines[1]).at("error").at("message"), "The engine's answer broke off (end of stream).");
}

TEST(BridgeReply, IntegerIdsCompareExactly) {
  const std::string big = R"({"jsonrpc":"2.0","id":9007199254740993,"method":"ping"})";
  const std::string other = R"({"jsonrpc":"2.0","id":9007199254740992,"result":{}})";
  auto r = app::bridge_reply(big, answered(200, "application/json"), other);
  ASSERT_EQ(r.lines.size(), 2u);  // 2^53 does not answer 2^53 + 1
  EXPECT_EQ(parsed(r.lines[1]).at("id"), 9007199254740993);
  const std::string huge = R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"ping"})";
  const std::string echoed = R"({"jsonrpc":"2.0","id":18446744073709551615,"result":{}})";
  EXPECT_EQ(app::bridge_reply(huge, answered(200, "application/json"), echoed).lines.size(), 1u);
}

TEST(BridgeReply, ARequestWithANullIdGetsItsOneReply) {
  const std::string ask = R"({"jsonrpc":"2.0","id":null,"method":"ping"})";
  const std::string pong = R"({"jsonrpc":"2.0","id":null,"result":{}})";
  EXPECT_EQ(app::bridge_reply(ask, answered(200, "application/json"), pong).lines, std::vector<std::string>{pong});
  auto lost = app::bridge_reply(ask, failed(http::Failure::unreachable, "Could not connect"), "");
  ASSERT_EQ(lost.lines.size(), 1u);
  EXPECT_TRUE(parsed(lost.lines[0]).at("id").is_null());
}

TEST(BridgeReply, AnObjectThatIsNoMessageGetsAnErrorWhenTheEngineSaysNothing) {
  const auto down = failed(http::Failure::unreachable, "Could not connect");
  auto empty = app::bridge_reply("{}", down, "");
  ASSERT_EQ(empty.lines.size(), 1u);
  EXPECT_TRUE(parsed(empty.lines[0]).at("id").is_null());
  auto with_id = app::bridge_reply(R"({"jsonrpc":"2.0","id":5})", down, "");
  ASSERT_EQ(with_id.lines.size(), 1u);
  EXPECT_EQ(parsed(with_id.lines[0]).at("id"), 5);
  // The agent's answer to a request of the server's expects nothing back.
  EXPECT_TRUE(app::bridge_reply(R"({"jsonrpc":"2.0","id":3,"result":{}})", down, "").lines.empty());
}

TEST(BridgeReply, ARefusalAsAnEventStreamIsReadAsOne) {
  auto refused = answered(500, kSse);
  refused.body = event(R"({"jsonrpc":"2.0","id":7,"error":{"code":-32603,"message":"Internal error"}})");
  auto r = app::bridge_reply(kPing, refused, "");
  ASSERT_EQ(r.lines.size(), 1u);
  EXPECT_EQ(parsed(r.lines[0]).at("error").at("code"), -32603);
}

// MCP has no reply to a cancelled request: when the engine's answer to one ends with none, the bridge
// makes none up (an error for an id the agent dropped would only be noise) and says nothing on stderr.
TEST(BridgeReply, ACancelledRequestThatGotNoReplyGetsNoneFromTheBridge) {
  const std::string call = R"({"jsonrpc":"2.0","id":"c-1","method":"tools/call","params":{"name":"x"}})";
  std::vector<std::string> asked;
  std::function<bool(const std::string&)> cancelled = [&](const std::string& id) {
    asked.push_back(id);
    return id == R"("c-1")";
  };
  auto r = app::bridge_reply(call, answered(200, kSse), "", cancelled);
  EXPECT_TRUE(r.lines.empty());
  EXPECT_FALSE(r.trouble);
  EXPECT_EQ(asked, std::vector<std::string>{R"("c-1")"});
  // Not cancelled: the error as before. Answered anyway: the answer, and the question never asked.
  asked.clear();
  EXPECT_EQ(app::bridge_reply(kPing, answered(200, kSse), "", cancelled).lines.size(), 1u);
  EXPECT_EQ(app::bridge_reply(kPing, answered(200, kSse), event(kPong), cancelled).lines, std::vector<std::string>{kPong});
  EXPECT_EQ(asked, std::vector<std::string>{"7"});
  // An answer that broke off is not the engine ending a cancelled call: the agent hears of it.
  auto broke = app::bridge_reply(call, failed(http::Failure::broke_off, "reset", 200), "", cancelled);
  EXPECT_EQ(broke.lines.size(), 1u);
  EXPECT_EQ(app::cancelled_request_id(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"c-1"}})"),
            R"("c-1")");
  EXPECT_FALSE(app::cancelled_request_id(call));
  EXPECT_FALSE(app::cancelled_request_id("not json"));
}
