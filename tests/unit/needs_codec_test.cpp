#include <gtest/gtest.h>

#include <boost/json.hpp>

#include "adapters/web/codec.hpp"

using namespace leuria;
namespace json = boost::json;

static core::Needs needs_of(std::string_view text) {
  json::value v = json::parse(text);
  return web::parse_needs(&v);
}

TEST(Needs, ClosedVocabulary) {
  auto n = needs_of(R"({"tools":true,"images":1,"effort":"deep","context":8000,"admin":true,"shell":"yes"})");
  EXPECT_TRUE(n.tools);
  EXPECT_TRUE(n.images);
  EXPECT_EQ(n.effort, core::Effort::deep);
  EXPECT_EQ(n.context, 8000u);
}

TEST(Needs, LinkWordsCountAsFlags) {
  auto n = needs_of(R"({"tools":"1","images":"true","effort":"light","context":"8000"})");
  EXPECT_TRUE(n.tools);
  EXPECT_TRUE(n.images);
  EXPECT_EQ(n.effort, core::Effort::light);
  EXPECT_EQ(n.context, 8000u);
}

TEST(Needs, BadValuesAreDropped) {
  auto n = needs_of(R"({"tools":"maybe","images":2,"effort":"max","context":-5})");
  EXPECT_TRUE(n.empty());
  EXPECT_TRUE(needs_of(R"({"context":1.5})").empty());
  EXPECT_TRUE(needs_of(R"({"context":"12abc"})").empty());
  EXPECT_TRUE(needs_of(R"({"context":1e12})").empty());
  EXPECT_TRUE(needs_of(R"([1,2])").empty());
  EXPECT_TRUE(needs_of(R"("tools")").empty());
}

TEST(Needs, EncodedBackOnlyWithWhatIsSet) {
  core::Needs n;
  n.images = true;
  n.context = 100;
  EXPECT_EQ(json::serialize(web::encode_needs(n)), R"({"images":true,"context":100})");
}

TEST(Body, EmptyIsAnEmptyObject) {
  http::Request r;
  r.body = " \r\n";
  auto b = web::parse_body(r);
  ASSERT_TRUE(b);
  EXPECT_TRUE(b->empty());
}

TEST(Body, InvalidOrNotAnObjectIs400) {
  for (const char* text : {"{", "nul", "[]", "\"x\"", "42", "{\"a\":1}x"}) {
    http::Request r;
    r.body = text;
    auto b = web::parse_body(r);
    ASSERT_FALSE(b) << text;
    EXPECT_EQ(b.error().status, 400u);
    EXPECT_EQ(b.error().body, R"({"error":"Invalid JSON body"})");
  }
}

TEST(Claim, NonceThatIsNotAStringIsPresentButInvalid) {
  auto c = web::parse_claim(json::parse(R"({"nonce":12,"app":"Shop"})").as_object());
  ASSERT_TRUE(c.nonce);
  EXPECT_EQ(*c.nonce, "");
  EXPECT_EQ(c.app, "Shop");
  EXPECT_FALSE(web::parse_claim(json::parse(R"({"app":"Shop"})").as_object()).nonce);
}

TEST(Decide, AllowMustBeABoolean) {
  EXPECT_EQ(web::parse_allow(json::parse(R"({"allow":true})").as_object()), true);
  EXPECT_EQ(web::parse_allow(json::parse(R"({"allow":false})").as_object()), false);
  EXPECT_FALSE(web::parse_allow(json::parse(R"({"allow":"yes"})").as_object()));
  EXPECT_FALSE(web::parse_allow(json::parse(R"({})").as_object()));
}

TEST(Health, TheAnswerWrittenAsTextIsTheJsonItSays) {
  web::HealthView h;
  h.version = "0.1.0";
  h.agent = "Qwen \"3\" \\ caf\xC3\xA9\n\x01";
  auto r = web::health_response(h);
  EXPECT_EQ(r.status, 200u);
  EXPECT_EQ(r.header("Content-Type"), "application/json");
  EXPECT_EQ(r.header("Cache-Control"), "no-store");
  EXPECT_EQ(json::parse(r.body), (json::object{{"leuria", "0.1.0"}, {"ok", true}, {"agent", h.agent}, {"approvals", "page"}}));
  h.approvals_in_app = true;
  h.paired = false;
  h.embed = "nomic-embed-text";
  EXPECT_EQ(json::parse(web::health_response(h).body),
            (json::object{{"leuria", "0.1.0"}, {"ok", true}, {"agent", h.agent}, {"approvals", "app"}, {"paired", false},
                          {"embed", "nomic-embed-text"}}));
  h.paired = true;
  EXPECT_EQ(json::parse(web::health_response(h).body).at("paired"), true);
}
