#include "core/grants.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "core/random.hpp"

namespace leuria::core {

GrantBook::GrantBook(GrantRepository& repo, std::chrono::milliseconds interval)
    : repo_(repo), last_used_interval_(interval), grants_(repo.load()) {}

const Grant* GrantBook::find(const std::string& origin) const {
  auto it = std::find_if(grants_.begin(), grants_.end(), [&](const Grant& g) { return g.origin == origin; });
  return it == grants_.end() ? nullptr : &*it;
}

bool GrantBook::has_grant(const std::string& origin) const { return find(origin) != nullptr; }

bool GrantBook::token_valid(const std::string& origin, std::string_view token) {
  const Grant* g = find(origin);
  if (!g || token.empty()) {
    // Same work whether or not the origin has a grant, so timing says nothing about grants.
    (void)constant_time_equal(sha256_hex(token), std::string(64, '0'));
    return false;
  }
  if (!constant_time_equal(sha256_hex(token), g->token_hash)) return false;

  auto now = std::chrono::steady_clock::now();
  auto it = last_touch_.find(origin);
  if (it == last_touch_.end() || now - it->second >= last_used_interval_) {
    last_touch_[origin] = now;
    std::string when = now_iso8601();
    repo_.touch(origin, when);
    for (auto& grant : grants_)
      if (grant.origin == origin) grant.last_used_at = when;
  }
  return true;
}

std::string GrantBook::issue(const std::string& origin, const std::optional<std::string>& app,
                             const Needs& needs) {
  std::string token = random_base64url(kTokenBytes);
  Grant g;
  g.origin = origin;
  g.app = app;
  g.token_hash = sha256_hex(token);
  g.created_at = now_iso8601();
  g.needs = needs;
  repo_.upsert(g);
  auto before = grants_;
  grants_ = repo_.load();
  // A replaced token ends the sessions that used the old one.
  for (auto& old : before)
    if (old.origin == origin && revoked_) revoked_(origin);
  return token;
}

bool GrantBook::revoke(const std::string& origin) {
  bool removed = repo_.remove(origin);
  auto before = grants_;
  grants_ = repo_.load();
  notify_lost(before);
  return removed;
}

void GrantBook::reload() {
  auto before = grants_;
  grants_ = repo_.load();
  notify_lost(before);
}

void GrantBook::notify_lost(const std::vector<Grant>& before) {
  if (!revoked_) return;
  for (auto& old : before) {
    const Grant* now = find(old.origin);
    if (!now || now->token_hash != old.token_hash || now->agent != old.agent || now->model != old.model)
      revoked_(old.origin);
  }
}

}  // namespace leuria::core
