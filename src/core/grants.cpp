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
    (void)constant_time_equal(sha256_.hex(token), std::string(64, '0'));
    return false;
  }
  if (!constant_time_equal(sha256_.hex(token), g->token_hash)) return false;

  auto now = std::chrono::steady_clock::now();
  auto it = last_touch_.find(origin);
  if (it == last_touch_.end() || now - it->second >= last_used_interval_) {
    last_touch_[origin] = now;
    std::string when = now_iso8601();
    try {
      repo_.touch(origin, when);
      for (auto& grant : grants_)
        if (grant.origin == origin) grant.last_used_at = when;
    } catch (const std::exception&) {
      // lastUsedAt is a note for the visitor, not a change they asked for: a full disk must not
      // stop a connected site. The next interval tries again.
    }
  }
  return true;
}

boost::system::result<std::string, std::string> GrantBook::issue(const std::string& origin,
                                                                  const std::optional<std::string>& app,
                                                                  const Needs& needs) {
  std::string token = random_base64url(kTokenBytes);
  Grant g;
  g.origin = origin;
  g.app = app;
  g.token_hash = sha256_.hex(token);
  g.created_at = now_iso8601();
  g.needs = needs;
  Grant stored;
  try {
    stored = repo_.upsert(g);
  } catch (const std::exception& e) {
    // Fail closed: the token is dropped unused and the grants we hold stay as they were.
    last_save_error_ = e.what();
    return {boost::system::in_place_error, last_save_error_};
  }
  auto before = grants_;
  refresh([&](std::vector<Grant>& grants) {
    std::erase_if(grants, [&](const Grant& old) { return old.origin == origin; });
    grants.push_back(stored);
  });
  // A replaced token ends the sessions that used the old one; so does what another writer changed
  // meanwhile (`leuria sites use` for another site), which this load takes in before the file
  // watcher's reload would, and that reload then finds nothing changed.
  notify_lost(before);
  return {boost::system::in_place_value, std::move(token)};
}

boost::system::result<bool, std::string> GrantBook::revoke(const std::string& origin) {
  bool removed = false;
  try {
    removed = repo_.remove(origin);
  } catch (const std::exception& e) {
    // Fail closed: the site stays as the file says it is, connected, and the visitor is told.
    last_save_error_ = e.what();
    return {boost::system::in_place_error, last_save_error_};
  }
  auto before = grants_;
  refresh([&](std::vector<Grant>& grants) {
    std::erase_if(grants, [&](const Grant& old) { return old.origin == origin; });
  });
  notify_lost(before);
  return removed;
}

void GrantBook::refresh(const std::function<void(std::vector<Grant>&)>& apply) {
  try {
    grants_ = repo_.load();  // also picks up what other writers changed meanwhile
  } catch (const std::exception&) {
    apply(grants_);  // the change is on disk: it holds here too
  }
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
