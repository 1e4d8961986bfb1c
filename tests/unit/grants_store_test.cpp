#include <gtest/gtest.h>
#include <sys/stat.h>

#include <boost/json.hpp>

#include "core/grants.hpp"
#include "core/random.hpp"
#include "store/grants_file.hpp"
#include "temp_home.hpp"

using namespace leuria;
namespace json = boost::json;
using namespace std::chrono_literals;

namespace {
struct Fixture {
  TempHome home;
  std::vector<std::string> logs;
  store::GrantsFile file{home.dir, [this](const std::string& m) { logs.push_back(m); }};
};
}  // namespace

TEST(GrantsStore, IssueStoresOnlyTheHashPrivately) {
  Fixture f;
  core::GrantBook book(f.file, 60s);
  core::Needs needs;
  needs.tools = true;
  std::string token = *book.issue("https://shop.example", "Shop", needs);
  EXPECT_EQ(token.size(), 43u);

  std::string text = f.home.read("grants.json");
  EXPECT_EQ(text.find(token), std::string::npos);
  auto g = json::parse(text).at("grants").at(0).as_object();
  EXPECT_EQ(g.at("origin"), "https://shop.example");
  EXPECT_EQ(g.at("app"), "Shop");
  EXPECT_EQ(g.at("tokenHash"), json::value(core::sha256_hex(token)));
  EXPECT_EQ(g.at("needs"), json::parse(R"({"tools":true})"));
  EXPECT_TRUE(g.contains("createdAt"));

  struct stat st{};
  ASSERT_EQ(::stat((f.home.dir / "grants.json").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(book.token_valid("https://shop.example", token));
  EXPECT_FALSE(book.token_valid("https://other.example", token));
  EXPECT_FALSE(book.token_valid("https://shop.example", token + "x"));
  EXPECT_FALSE(book.token_valid("https://shop.example", ""));
}

TEST(GrantsStore, PairingAgainReplacesTheTokenAndKeepsTheSitesAi) {
  Fixture f;
  f.home.write("grants.json",
               R"({"grants":[{"origin":"https://shop.example","tokenHash":")" + std::string(64, 'a') +
                   R"(","createdAt":"2026-01-01T00:00:00.000Z","agent":"gemini","model":"pro","extra":1}]})");
  core::GrantBook book(f.file, 60s);
  std::vector<std::string> ended;
  book.on_revoked([&](const std::string& o) { ended.push_back(o); });
  std::string token = *book.issue("https://shop.example", std::nullopt, {});
  auto g = json::parse(f.home.read("grants.json")).at("grants").at(0).as_object();
  EXPECT_EQ(g.at("agent"), "gemini");
  EXPECT_EQ(g.at("model"), "pro");
  EXPECT_EQ(g.at("extra"), 1);  // fields we don't know are kept
  EXPECT_EQ(g.at("tokenHash"), json::value(core::sha256_hex(token)));
  EXPECT_EQ(ended, std::vector<std::string>{"https://shop.example"});
  ASSERT_TRUE(book.find("https://shop.example"));
  EXPECT_EQ(book.find("https://shop.example")->agent, "gemini");
}

TEST(GrantsStore, RevokeAndReloadSeeOtherWriters) {
  Fixture f;
  core::GrantBook book(f.file, 60s);
  std::string token = *book.issue("https://a.example", std::nullopt, {});
  ASSERT_TRUE(book.issue("https://b.example", std::nullopt, {}));
  std::vector<std::string> ended;
  book.on_revoked([&](const std::string& o) { ended.push_back(o); });

  // Another process (leuria sites revoke) edits the file; the engine reloads it.
  store::GrantsFile other(f.home.dir, [](const std::string&) {});
  EXPECT_TRUE(other.remove("https://a.example"));
  EXPECT_FALSE(other.remove("https://a.example"));
  book.reload();
  EXPECT_FALSE(book.token_valid("https://a.example", token));
  EXPECT_EQ(ended, std::vector<std::string>{"https://a.example"});
  EXPECT_TRUE(book.has_grant("https://b.example"));
  EXPECT_TRUE(*book.revoke("https://b.example"));
  EXPECT_FALSE(*book.revoke("https://b.example"));
  EXPECT_TRUE(book.list().empty());
}

TEST(GrantsStore, CorruptFileIsSetAsideNeverEmptied) {
  Fixture f;
  f.home.write("grants.json", "{not json");
  core::GrantBook book(f.file, 60s);
  EXPECT_TRUE(book.list().empty());
  ASSERT_EQ(f.logs.size(), 1u);
  EXPECT_NE(f.logs[0].find("moved to"), std::string::npos);
  bool found = false;
  for (auto& e : std::filesystem::directory_iterator(f.home.dir)) {
    if (e.path().filename().string().starts_with("grants.json.corrupt-")) {
      found = true;
      EXPECT_EQ(f.home.read(e.path().filename().string()), "{not json");
    }
  }
  EXPECT_TRUE(found);
}

TEST(GrantsStore, UnusableEntriesAreKeptInTheFile) {
  Fixture f;
  f.home.write("grants.json", R"({"grants":[{"origin":"file://x"},{"note":"mine"}]})");
  core::GrantBook book(f.file, 60s);
  EXPECT_TRUE(book.list().empty());
  ASSERT_TRUE(book.issue("https://a.example", std::nullopt, {}));
  auto grants = json::parse(f.home.read("grants.json")).at("grants").as_array();
  EXPECT_EQ(grants.size(), 3u);
}

TEST(GrantsStore, LastUsedIsWrittenAtMostOncePerInterval) {
  Fixture f;
  core::GrantBook book(f.file, 1h);
  std::string token = *book.issue("https://a.example", std::nullopt, {});
  EXPECT_TRUE(book.token_valid("https://a.example", token));
  auto first = json::parse(f.home.read("grants.json")).at("grants").at(0).at("lastUsedAt");
  struct stat before{};
  ::stat((f.home.dir / "grants.json").c_str(), &before);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(book.token_valid("https://a.example", token));
  struct stat after{};
  ::stat((f.home.dir / "grants.json").c_str(), &after);
  EXPECT_EQ(before.st_ino, after.st_ino);  // not rewritten
  EXPECT_EQ(json::parse(f.home.read("grants.json")).at("grants").at(0).at("lastUsedAt"), first);
}

TEST(GrantsStore, TopLevelFieldsAndModesAreKept) {
  Fixture f;
  f.home.write("grants.json", R"({"version":3,"grants":[],"other":true})");
  ::chmod((f.home.dir / "grants.json").c_str(), 0644);
  core::GrantBook book(f.file, 60s);
  struct stat st{};
  ::stat((f.home.dir / "grants.json").c_str(), &st);
  EXPECT_EQ(st.st_mode & 0777, 0600u);  // made private on the first read
  ASSERT_TRUE(book.issue("https://a.example", std::nullopt, {}));
  auto root = json::parse(f.home.read("grants.json")).as_object();
  EXPECT_EQ(root.at("version"), 3);
  EXPECT_EQ(root.at("other"), true);
}

TEST(GrantsStore, AnEmptyFileIsNoGrantsNotCorrupt) {
  Fixture f;
  f.home.write("grants.json", "");
  core::GrantBook book(f.file, 60s);
  EXPECT_TRUE(book.list().empty());
  EXPECT_TRUE(f.logs.empty());
  EXPECT_TRUE(std::filesystem::exists(f.home.dir / "grants.json"));
}

TEST(GrantsStore, DuplicateOriginsCollapseToTheFirst) {
  Fixture f;
  const std::string a(64, 'a'), b(64, 'b');
  f.home.write("grants.json", R"({"grants":[{"origin":"https://a.example","tokenHash":")" + a +
                                  R"(","agent":"gemini"},{"origin":"HTTPS://A.example:443","tokenHash":")" + b + R"("}]})");
  core::GrantBook book(f.file, 60s);
  ASSERT_EQ(book.list().size(), 1u);
  EXPECT_EQ(book.find("https://a.example")->token_hash, a);
  std::string token = *book.issue("https://a.example", std::nullopt, {});
  EXPECT_TRUE(book.token_valid("https://a.example", token));
  auto grants = json::parse(f.home.read("grants.json")).at("grants").as_array();
  ASSERT_EQ(grants.size(), 1u);
  EXPECT_EQ(grants[0].at("agent"), "gemini");
}

TEST(GrantsStore, ASitesOwnAiChangeEndsItsSessions) {
  Fixture f;
  core::GrantBook book(f.file, 60s);
  ASSERT_TRUE(book.issue("https://a.example", std::nullopt, {}));
  std::vector<std::string> ended;
  book.on_revoked([&](const std::string& o) { ended.push_back(o); });
  store::GrantsFile other(f.home.dir, [](const std::string&) {});
  EXPECT_TRUE(other.set_site_ai("https://a.example", "gemini", "pro"));
  EXPECT_FALSE(other.set_site_ai("https://b.example", "gemini", std::nullopt));
  book.reload();
  EXPECT_EQ(ended, std::vector<std::string>{"https://a.example"});
  EXPECT_EQ(book.find("https://a.example")->agent, "gemini");
  EXPECT_EQ(book.find("https://a.example")->model, "pro");
}

// Pairing one site loads the file, and with it what another writer changed for another site: that
// site's sessions end then, since the file watcher's reload that follows finds nothing new.
TEST(GrantsStore, AnotherSitesChangeTakenInByAPairingStillEndsItsSessions) {
  Fixture f;
  core::GrantBook book(f.file, 60s);
  ASSERT_TRUE(book.issue("https://b.example", std::nullopt, {}));
  std::vector<std::string> ended;
  book.on_revoked([&](const std::string& o) { ended.push_back(o); });
  store::GrantsFile other(f.home.dir, [](const std::string&) {});
  EXPECT_TRUE(other.set_site_ai("https://b.example", "gemini", std::nullopt));
  ASSERT_TRUE(book.issue("https://a.example", std::nullopt, {}));  // a new site: nothing of its own to end
  EXPECT_EQ(ended, std::vector<std::string>{"https://b.example"});
  EXPECT_EQ(book.find("https://b.example")->agent, "gemini");
  book.reload();
  EXPECT_EQ(ended, std::vector<std::string>{"https://b.example"});
}
