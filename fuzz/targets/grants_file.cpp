// Fuzz target: the grants file reader and its read-modify-write cycle (store/grants_file.cpp),
// the input being grants.json's contents, in a private temp folder (on /dev/shm when there is one,
// so the fsyncs cost nothing).
//
// Checks: nothing throws; every grant read has a normalised web origin, a 64-character token hash
// and an origin no other grant has; a file that can't be read is moved aside whole (its bytes
// intact in grants.json.corrupt-*) and reads as no grants; on a file that reads, upserting a new
// origin, replacing an existing origin's grant, touching and removing change that one grant and
// nothing else the reader sees (other grants, their AI choice), and every write reads back.
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "core/origin.hpp"
#include "store/atomic_file.hpp"
#include "store/grants_file.hpp"
#include "support/world.hpp"

using namespace leuria;
using fuzz::check;
namespace fs = std::filesystem;

namespace {

// A private folder per input, removed after it (libFuzzer ends with _Exit: no atexit cleanup runs).
struct TempHome {
  fs::path dir;
  TempHome() {
    const std::string base = fs::exists("/dev/shm") ? "/dev/shm" : fs::temp_directory_path().string();
    std::string tmpl = base + "/leuria-fuzz-grants-XXXXXX";
    if (!::mkdtemp(tmpl.data())) fuzz::fail("mkdtemp");
    dir = tmpl;
  }
  ~TempHome() { fs::remove_all(dir); }
};

bool same(const core::Grant& a, const core::Grant& b) {
  return a.origin == b.origin && a.app == b.app && a.token_hash == b.token_hash && a.created_at == b.created_at &&
         a.last_used_at == b.last_used_at && a.agent == b.agent && a.model == b.model;
}

const core::Grant* find(const std::vector<core::Grant>& list, const std::string& origin) {
  for (auto& g : list)
    if (g.origin == origin) return &g;
  return nullptr;
}

void check_read(const std::vector<core::Grant>& list) {
  for (std::size_t i = 0; i < list.size(); ++i) {
    check(core::normalize_web_origin(list[i].origin) == list[i].origin, "a grant for an origin not normalised");
    check(list[i].token_hash.size() == 64, "a grant without a usable token hash");
    for (std::size_t j = 0; j < i; ++j) check(list[j].origin != list[i].origin, "two grants for one origin");
  }
}

// Everything in `before` except `origin` reads the same in `after`.
void check_others_kept(const std::vector<core::Grant>& before, const std::vector<core::Grant>& after,
                       const std::string& origin) {
  for (auto& g : before) {
    if (g.origin == origin) continue;
    auto* now = find(after, g.origin);
    check(now && same(g, *now), "a change to one grant changed another");
  }
  for (auto& g : after) check(g.origin == origin || find(before, g.origin), "a change added another grant");
}

core::Grant grant(std::string origin, char hash) {
  core::Grant g;
  g.origin = std::move(origin);
  g.app = "Fuzz";
  g.token_hash = std::string(64, hash);
  g.created_at = "2025-06-01T00:00:00Z";
  return g;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const TempHome temp;
  const fs::path& dir = temp.dir;
  const std::string contents(reinterpret_cast<const char*>(data), size);
  {
    std::ofstream f(dir / "grants.json", std::ios::binary);
    f << contents;
  }
  int logged = 0;
  store::GrantsFile file(dir, [&logged](const std::string&) { ++logged; });
  const auto first = file.load();
  check_read(first);

  if (!fs::exists(dir / "grants.json")) {
    // Set aside: the same bytes under another name, no grants, one sentence for the log.
    check(first.empty() && logged == 1, "a corrupt file that still gave grants, or said nothing");
    bool kept = false;
    for (auto& entry : fs::directory_iterator(dir))
      if (entry.path().filename().string().starts_with("grants.json.corrupt-"))
        kept = kept || store::read_file(entry.path()) == contents;
    check(kept, "a corrupt file was not kept whole");
    check(file.load().empty(), "grants after the file was set aside");
    return 0;
  }
  check(logged == 0, "a file that reads was reported as corrupt");

  // A new origin.
  const std::string added = "https://added.example";
  file.upsert(grant(added, 'a'));
  auto second = file.load();
  check_read(second);
  check(find(second, added) && find(second, added)->token_hash == std::string(64, 'a'), "an upsert did not read back");
  check_others_kept(first, second, added);

  // A new token for an origin the file had first (its AI choice stays).
  if (!first.empty()) {
    const core::Grant& old = first.front();
    auto stored = file.upsert(grant(old.origin, 'b'));
    check(stored.agent == old.agent && stored.model == old.model, "a new token lost the site's AI");
    auto third = file.load();
    check_read(third);
    auto* now = find(third, old.origin);
    check(now && now->token_hash == std::string(64, 'b') && now->agent == old.agent && now->model == old.model,
          "a replaced grant did not read back");
    check_others_kept(second, third, old.origin);
    file.touch(old.origin, "2025-07-01T00:00:00Z");
    auto touched = file.load();
    check(find(touched, old.origin) && find(touched, old.origin)->last_used_at == "2025-07-01T00:00:00Z",
          "touch did not read back");
    check_others_kept(third, touched, old.origin);
    second = std::move(touched);
  }

  // Removal takes the origin and nothing else.
  check(file.remove(added), "remove found nothing");
  auto last = file.load();
  check(!find(last, added), "a removed grant reads back");
  check_others_kept(second, last, added);
  return 0;
}
