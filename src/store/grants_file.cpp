#include "store/grants_file.hpp"

#include <algorithm>

#include <boost/json.hpp>
#include <sys/stat.h>

#include <cstdio>

#include "core/clock.hpp"
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
    auto x = c->to_number<std::int64_t>();
    if (x > 0 && x <= core::kMaxContextTokens) n.context = static_cast<std::uint32_t>(x);
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
  boost::system::error_code ec;
  json::value v = json::parse(*text, ec);
  if (!ec && v.is_object()) {
    auto* g = v.as_object().if_contains("grants");
    if (!g || g->is_array()) return std::move(v.as_object());
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

void write_root(const std::filesystem::path& path, json::object& root) {
  grants_of(root);
  write_file_atomic(path, json::serialize(root) + "\n");
}

}  // namespace

std::vector<core::Grant> GrantsFile::load() {
  FileLock lock(lock_path_);
  std::vector<core::Grant> out;
  json::object root = read_root(path_, log_);
  for (auto& v : grants_of(root)) {
    auto origin = entry_origin(v);
    if (!origin) continue;
    const bool seen = std::any_of(out.begin(), out.end(), [&](const core::Grant& g) { return g.origin == *origin; });
    if (seen) continue;  // the first entry for an origin is the one that counts
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
  json::array& grants = grants_of(root);
  // One entry per origin: the first is updated, later duplicates are dropped.
  json::array kept;
  json::object* entry = nullptr;
  for (auto& v : grants) {
    if (entry_origin(v) == grant.origin) {
      if (entry) continue;
      entry = &kept.emplace_back(v).as_object();
    } else {
      kept.push_back(v);
    }
  }
  if (!entry) entry = &kept.emplace_back(json::object{}).as_object();

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
  write_root(path_, root);
  return stored;
}

bool GrantsFile::remove(const std::string& origin) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  json::array& grants = grants_of(root);
  const auto before = grants.size();
  json::array kept;
  for (auto& v : grants)
    if (entry_origin(v) != origin) kept.push_back(v);
  if (kept.size() == before) return false;
  grants = std::move(kept);
  write_root(path_, root);
  return true;
}

void GrantsFile::touch(const std::string& origin, const std::string& when) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  bool found = false;
  for (auto& v : grants_of(root)) {
    if (!found && entry_origin(v) == origin) {
      v.as_object()["lastUsedAt"] = when;
      found = true;
    }
  }
  if (found) write_root(path_, root);
}

bool GrantsFile::set_site_ai(const std::string& origin, const std::optional<std::string>& agent,
                             const std::optional<std::string>& model) {
  FileLock lock(lock_path_);
  json::object root = read_root(path_, log_);
  bool found = false;
  for (auto& v : grants_of(root)) {
    if (found || entry_origin(v) != origin) continue;
    found = true;
    auto& o = v.as_object();
    if (agent) o["agent"] = *agent; else o.erase("agent");
    if (agent && model) o["model"] = *model; else o.erase("model");
  }
  if (found) write_root(path_, root);
  return found;
}

}  // namespace leuria::store
