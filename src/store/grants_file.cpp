#include "store/grants_file.hpp"

#include <algorithm>
#include <set>

#include <boost/json.hpp>
#include <sys/stat.h>

#include <cstdio>

#include "core/clock.hpp"
#include "json/read.hpp"
#include "core/origin.hpp"
#include "store/atomic_file.hpp"

namespace leuria::store {

namespace json = boost::json;

namespace {

std::optional<std::string> str(const json::object& o, std::string_view key) {
  if (auto* v = o.if_contains(key); v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

core::Needs needs_from(const json::value* v) {
  core::Needs n;
  if (!v || !v->is_object()) return n;
  const auto& o = v->as_object();
  if (auto* t = o.if_contains("tools"); t && t->is_bool()) n.tools = t->as_bool();
  if (auto* i = o.if_contains("images"); i && i->is_bool()) n.images = i->as_bool();
  if (auto e = str(o, "effort")) n.effort = core::parse_effort(*e);
  if (auto* c = o.if_contains("context"); c && (c->is_int64() || c->is_uint64())) {
    // The non-throwing form: a uint64 above 2^63 is out of range, not a reason to fail the whole read.
    boost::system::error_code ec;
    auto x = c->to_number<std::int64_t>(ec);
    if (!ec && x > 0 && x <= core::kMaxContextTokens) n.context = static_cast<std::uint32_t>(x);
  }
  return n;
}

json::object needs_to(const core::Needs& n) {
  json::object o;
  if (n.tools) o["tools"] = true;
  if (n.images) o["images"] = true;
  if (n.effort) o["effort"] = core::effort_word(*n.effort);
  if (n.context) o["context"] = *n.context;
  return o;
}

// The entry's origin, normalized, or nullopt for an entry we can't use (kept as it is).
std::optional<std::string> entry_origin(const json::value& v) {
  if (!v.is_object()) return std::nullopt;
  auto o = str(v.as_object(), "origin");
  if (!o) return std::nullopt;
  return core::normalize_web_origin(*o);
}

}  // namespace

GrantsFile::GrantsFile(std::filesystem::path home, std::function<void(const std::string&)> log)
    : path_(home / "grants.json"), lock_path_(home / "grants.json.lock"), log_(std::move(log)) {}

namespace {

// Reads the whole file. An empty file is no grants. A file that is not JSON (or not the expected
// shape) is renamed to grants.json.corrupt-<time> (0600) so nothing is lost, and no grants are
// returned. Fields we don't know, at any level, are kept for the next write.
json::object read_root(const std::filesystem::path& path, const std::function<void(const std::string&)>& log) {
  auto text = read_file(path);
  if (!text) return {};
  ::chmod(path.c_str(), 0600);
  if (text->find_first_not_of(" \t\r\n") == std::string::npos) return {};
  auto root = jsonio::read_object(*text);
  if (root) {
    auto* g = root->if_contains("grants");
    if (!g || g->is_array()) return std::move(*root);
  }
  auto aside = path;
  aside += ".corrupt-" + core::now_iso8601();
  if (std::rename(path.c_str(), aside.c_str()) == 0) {
    ::chmod(aside.c_str(), 0600);
    log(path.string() + " is not valid; it was moved to " + aside.string() + " and no site is connected now.");
  } else {
    log(path.string() + " is not valid and could not be moved aside; no site is connected now.");
  }
  return {};
}

json::array& grants_of(json::object& root) {
  auto* g = root.if_contains("grants");
  if (!g || !g->is_array()) root["grants"] = json::array();
  return root["grants"].as_array();
}

// `before`: the root as read. When the new file is in place but not durable, the old one is put
// back (visible, at least) so that the file, the engine's memory and the failure reported agree.
void write_root(const std::filesystem::path& path, json::object& root, const json::object& before) {
  grants_of(root);
  try {
    write_file_atomic(path, json::serialize(root) + "\n");
  } catch (const NotDurable&) {
    try {
      write_file_atomic(path, json::serialize(before) + "\n");
    } catch (const std::exception&) {
      // Nothing better to do: the first error is the one to report.
    }
    throw;
  }
}

}  // namespace

std::vector<core::Grant> GrantsFile::load() {
  FileLock lock(lock_path_);
  // Every writer holds the lock, so a temp file seen now is from one that was killed mid-write.
  remove_stale_temps(path_);
  std::vector<core::Grant> out;
  std::set<std::string> counted;
  json::object root = read_root(path_, log_);
  for (auto& v : grants_of(root)) {
    auto origin = entry_origin(v);
    if (!origin) continue;
    // The first entry for an origin is the one that counts, usable or not: upsert and set_site_ai
    // change that one, so a later duplicate must not be what the engine reads.
    if (!counted.insert(*origin).second) continue;
    const auto& o = v.as_object();
    core::Grant g;
    g.origin = *origin;
    g.app = str(o, "app");
    g.token_hash = str(o, "tokenHash").value_or("");
    g.created_at = str(o, "createdAt").value_or("");
    g.last_used_at = str(o, "lastUsedAt");
    g.needs = needs_from(o.if_contains("needs"));
    g.agent = str(o, "agent");
    g.model = str(o, "model");
    if (g.token_hash.size() != 64) continue;  // unusable, but kept in the file
    out.push_back(std::move(g));
  }
  return out;
}

core::Grant GrantsFile::upsert(const core::Grant& grant) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  const json::object before = root;
  json::array& grants = grants_of(root);
  // One entry per origin: the first is updated, later duplicates are dropped.
  // The entry is found by index: a pointer into `kept` would dangle when a later push_back grows it.
  json::array kept;
  std::optional<std::size_t> at;
  for (auto& v : grants) {
    if (entry_origin(v) == grant.origin) {
      if (at) continue;
      at = kept.size();
    }
    kept.push_back(v);
  }
  if (!at) {
    at = kept.size();
    kept.emplace_back(json::object{});
  }
  json::object* entry = &kept[*at].as_object();

  // Replace what pairing decides; keep the site's AI choice and anything we don't know.
  (*entry)["origin"] = grant.origin;
  if (grant.app) (*entry)["app"] = *grant.app; else entry->erase("app");
  (*entry)["tokenHash"] = grant.token_hash;
  (*entry)["createdAt"] = grant.created_at;
  entry->erase("lastUsedAt");
  if (grant.needs.empty()) entry->erase("needs"); else (*entry)["needs"] = needs_to(grant.needs);
  core::Grant stored = grant;
  stored.agent = str(*entry, "agent");
  stored.model = str(*entry, "model");
  grants = std::move(kept);
  write_root(path_, root, before);
  return stored;
}

bool GrantsFile::remove(const std::string& origin) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  const json::object before = root;
  json::array& grants = grants_of(root);
  const auto count = grants.size();
  json::array kept;
  for (auto& v : grants)
    if (entry_origin(v) != origin) kept.push_back(v);
  if (kept.size() == count) return false;
  grants = std::move(kept);
  write_root(path_, root, before);
  return true;
}

void GrantsFile::touch(const std::string& origin, const std::string& when) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  const json::object before = root;
  bool found = false;
  for (auto& v : grants_of(root)) {
    if (!found && entry_origin(v) == origin) {
      v.as_object()["lastUsedAt"] = when;
      found = true;
    }
  }
  if (found) write_root(path_, root, before);
}

bool GrantsFile::set_site_ai(const std::string& origin, const std::optional<std::string>& agent,
                             const std::optional<std::string>& model) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  const json::object before = root;
  bool found = false;
  for (auto& v : grants_of(root)) {
    if (found || entry_origin(v) != origin) continue;
    found = true;
    auto& o = v.as_object();
    if (agent) o["agent"] = *agent; else o.erase("agent");
    if (agent && model) o["model"] = *model; else o.erase("model");
  }
  if (found) write_root(path_, root, before);
  return found;
}

}  // namespace leuria::store
