// Grants are acknowledged only once on disk: a write that fails changes nothing, on disk or in
// memory, and says why; temp files a killed writer left are cleaned up.
#include <gtest/gtest.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/json.hpp>

#include "core/grants.hpp"
#include "core/pairing.hpp"
#include "core/random.hpp"
#include "store/atomic_file.hpp"
#include "store/grants_file.hpp"
#include "temp_home.hpp"

using namespace leuria;
using namespace std::chrono_literals;
namespace json = boost::json;
namespace fs = std::filesystem;

namespace {

const std::string kSite = "https://shop.example";

struct Disk {
  TempHome home;
  store::GrantsFile file{home.dir, [](const std::string&) {}};
  // A folder where the temp file must go: open() fails with EISDIR, as a full disk would fail it.
  void break_writes() const { fs::create_directory(home.dir / "grants.json.tmp"); }
  void mend_writes() const { fs::remove(home.dir / "grants.json.tmp"); }
};

struct NoObserver : core::PairingObserver {
  void on_request(const core::PairingView&) override {}
  void on_decided(const core::PairingView&, core::Decision) override {}
};

}  // namespace

TEST(DurableGrants, AFailedIssueChangesNothingAndSaysWhy) {
  Disk d;
  core::GrantBook book(d.file, 60s);
  const std::string old_token = *book.issue(kSite, std::nullopt, {});
  const std::string before = d.home.read("grants.json");
  d.break_writes();
  auto again = book.issue(kSite, std::nullopt, {});
  ASSERT_FALSE(again);
  EXPECT_NE(again.error().find("grants.json.tmp"), std::string::npos) << again.error();
  EXPECT_NE(again.error().find("Is a directory"), std::string::npos) << again.error();
  EXPECT_EQ(book.last_save_error(), again.error());
  EXPECT_EQ(d.home.read("grants.json"), before);
  EXPECT_TRUE(book.token_valid(kSite, old_token));  // the old grant still holds, here and on disk

  auto fresh = book.issue("https://new.example", std::nullopt, {});
  ASSERT_FALSE(fresh);
  EXPECT_FALSE(book.has_grant("https://new.example"));
}

TEST(DurableGrants, AFailedRevokeLeavesTheSiteConnected) {
  Disk d;
  core::GrantBook book(d.file, 60s);
  const std::string token = *book.issue(kSite, std::nullopt, {});
  std::vector<std::string> ended;
  book.on_revoked([&](const std::string& o) { ended.push_back(o); });
  d.break_writes();
  auto r = book.revoke(kSite);
  ASSERT_FALSE(r);
  EXPECT_TRUE(book.token_valid(kSite, token));
  EXPECT_TRUE(ended.empty());
  EXPECT_NE(d.home.read("grants.json").find(kSite), std::string::npos);
  d.mend_writes();
  EXPECT_TRUE(*book.revoke(kSite));
  EXPECT_FALSE(book.token_valid(kSite, token));
  EXPECT_EQ(ended, std::vector<std::string>{kSite});
}

TEST(DurableGrants, AFailedLastUsedNoteDoesNotStopASite) {
  Disk d;
  core::GrantBook book(d.file, 0ms);
  const std::string token = *book.issue(kSite, std::nullopt, {});
  d.break_writes();
  EXPECT_TRUE(book.token_valid(kSite, token));
  EXPECT_TRUE(book.token_valid(kSite, token));
}

TEST(DurableGrants, TempFilesOfAKilledWriterAreRemovedAtLoad) {
  Disk d;
  d.home.write("grants.json", R"({"grants":[]})");
  d.home.write("grants.json.tmp", R"({"grants":[{"origin":)");  // torn
  d.home.write("grants.json.tmp-4242", "old naming");
  d.home.write("config.json.tmp", "not ours");
  EXPECT_TRUE(d.file.load().empty());
  EXPECT_FALSE(fs::exists(d.home.dir / "grants.json.tmp"));
  EXPECT_FALSE(fs::exists(d.home.dir / "grants.json.tmp-4242"));
  EXPECT_TRUE(fs::exists(d.home.dir / "config.json.tmp"));
  EXPECT_EQ(d.home.read("grants.json"), R"({"grants":[]})");
}

TEST(DurableGrants, AWriteLeavesNoTempAndAPrivateFile) {
  TempHome home;
  const fs::path p = home.dir / "x.json";
  store::write_file_atomic(p, "{}\n");
  store::write_file_atomic(p, "{\"a\":1}\n");
  EXPECT_EQ(home.read("x.json"), "{\"a\":1}\n");
  EXPECT_FALSE(fs::exists(store::temp_path(p)));
  EXPECT_EQ(fs::status(p).permissions() & fs::perms::all, fs::perms::owner_read | fs::perms::owner_write);
}

TEST(DurableGrants, YesIsOnDiskBeforeItIsAcknowledged) {
  Disk d;
  core::GrantBook grants(d.file, 60s);
  boost::asio::io_context ioc;
  NoObserver observer;
  core::PairingBook book(ioc.get_executor(), grants, core::PairingMode::link_asks, {50ms, 2000ms, 300ms, 20},
                         observer);
  const std::string nonce(22, 'n');
  auto id = book.link(kSite, nonce, std::nullopt, {});
  ASSERT_TRUE(id);

  d.break_writes();
  auto refused = book.decide(*id, true);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error(), core::PairingError::not_saved);
  EXPECT_EQ(book.find(*id)->state, core::PairingView::State::pending);  // the visitor can answer again
  EXPECT_FALSE(grants.has_grant(kSite));

  d.mend_writes();
  ASSERT_TRUE(book.decide(*id, true));
  // On disk before the page has collected anything.
  auto stored = json::parse(d.home.read("grants.json")).at("grants").at(0).as_object();
  EXPECT_EQ(stored.at("origin"), json::value(kSite));

  std::optional<boost::system::result<core::ClaimAnswer, core::PairingError>> answer;
  boost::asio::co_spawn(ioc, book.claim(kSite, nonce, std::nullopt, {}),
                        [&](std::exception_ptr, auto r) { answer = r; });
  while (!answer) ioc.run_one();
  ASSERT_TRUE(*answer);
  ASSERT_EQ((*answer)->status, core::ClaimAnswer::Status::allowed);
  EXPECT_EQ(stored.at("tokenHash"), json::value(core::sha256_hex((*answer)->token)));
  EXPECT_TRUE(grants.token_valid(kSite, (*answer)->token));
}
