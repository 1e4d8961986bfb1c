// The JSON-RPC connection: calls get exactly one result, requests exactly one reply.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "rpc/connection.hpp"

using namespace leuria;
namespace asio = boost::asio;
namespace json = boost::json;

namespace {
struct Fixture {
  asio::io_context ioc;
  std::vector<std::string> sent;
  std::shared_ptr<rpc::Connection> c =
      std::make_shared<rpc::Connection>(ioc.get_executor(), [this](std::string l) { sent.push_back(l); return true; }, 2);
  std::shared_ptr<std::optional<rpc::Result>> call(std::string method) {
    auto slot = std::make_shared<std::optional<rpc::Result>>();
    asio::co_spawn(ioc, c->call(method, json::object{}), [slot](std::exception_ptr, rpc::Result r) { *slot = r; });
    ioc.restart();
    ioc.poll();
    return slot;
  }
};
}  // namespace

TEST(Rpc, ACallGetsItsReply) {
  Fixture f;
  auto slot = f.call("initialize");
  ASSERT_EQ(f.sent.size(), 1u);
  auto id = json::parse(f.sent[0]).at("id").as_int64();
  f.c->receive(R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"ok":true}})");
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_TRUE(*slot && **slot);
  EXPECT_EQ((**slot)->at("ok"), true);
}

TEST(Rpc, ErrorsAndCloseAreResultsToo) {
  Fixture f;
  auto a = f.call("a");
  auto b = f.call("b");
  auto c = f.call("c");  // over the bound of 2
  ASSERT_TRUE(*c);
  EXPECT_EQ((**c).error().code, rpc::kInternalError);
  f.c->receive(R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"bad"}})");
  f.c->close("gone");
  f.ioc.restart();
  f.ioc.poll();
  EXPECT_EQ((**a).error().code, -32602);
  EXPECT_EQ((**b).error().code, rpc::kConnectionClosed);
  auto d = f.call("d");
  EXPECT_EQ((**d).error().code, rpc::kConnectionClosed);
}

TEST(Rpc, EveryRequestGetsExactlyOneReply) {
  Fixture f;
  f.c->on_request([](std::string method, json::value) -> asio::awaitable<rpc::Result> {
    if (method == "throw") throw std::runtime_error("boom");
    co_return json::value("ok");
  });
  std::vector<std::string> notes;
  f.c->on_notification([&](std::string m, json::value) { notes.push_back(m); });
  std::vector<std::string> junk;
  f.c->on_protocol_error([&](std::string w) { junk.push_back(w); });
  f.c->receive(R"({"jsonrpc":"2.0","id":"a","method":"ok"})");
  f.c->receive(R"({"jsonrpc":"2.0","id":7,"method":"throw"})");
  f.c->receive(R"({"jsonrpc":"2.0","method":"session/update","params":{}})");
  f.c->receive("not json at all");
  f.c->receive(R"({"jsonrpc":"2.0","id":99,"result":1})");  // a reply to nothing
  f.ioc.restart();
  f.ioc.poll();
  ASSERT_EQ(f.sent.size(), 2u);
  EXPECT_EQ(json::parse(f.sent[0]).at("result"), "ok");
  EXPECT_EQ(json::parse(f.sent[1]).at("error").at("code"), rpc::kInternalError);
  EXPECT_EQ(notes, std::vector<std::string>{"session/update"});
  EXPECT_EQ(junk.size(), 2u);
}
