// Grants: which origins the visitor connected, and the check of their tokens.
// GrantBook is the core's view, owned by the io thread; GrantRepository is where it persists
// (store/grants_file implements it on grants.json). Only token hashes are ever kept.
#pragma once
#include <boost/system/result.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/needs.hpp"
#include "core/random.hpp"

namespace leuria::core {

struct Grant {
  std::string origin;  // normalized
  std::optional<std::string> app;
  std::string token_hash;  // hex SHA-256 of the token
  std::string created_at;  // ISO 8601
  std::optional<std::string> last_used_at;
  Needs needs;
  std::optional<std::string> agent;  // the site's own AI, when the visitor chose one
  std::optional<std::string> model;
};

// Persistence of grants. Each mutation is applied to what is on disk at that moment (another
// process, `leuria sites revoke`, may have changed it), atomically and durably: it returns only once
// the change is on disk, and throws std::runtime_error (with the system's reason) when it can't be.
class GrantRepository {
 public:
  virtual ~GrantRepository() = default;
  virtual std::vector<Grant> load() = 0;
  // Adds the grant or replaces the token, app and needs of the origin's grant, keeping its AI choice.
  // Returns the grant as stored.
  virtual Grant upsert(const Grant& grant) = 0;
  virtual bool remove(const std::string& origin) = 0;
  virtual void touch(const std::string& origin, const std::string& when) = 0;
};

class GrantBook {
 public:
  // last_used_interval: lastUsedAt is written at most this often per origin.
  GrantBook(GrantRepository& repo, std::chrono::milliseconds last_used_interval);

  bool has_grant(const std::string& origin) const;
  const Grant* find(const std::string& origin) const;
  std::vector<Grant> list() const { return grants_; }

  // True when token is the origin's current token (constant-time on the hashes). Records use.
  bool token_valid(const std::string& origin, std::string_view token);

  // Creates or replaces the origin's grant and returns the new token (the only time it exists
  // in clear). The site's AI choice is kept. Returns once the grant is on disk; when it can't be
  // saved, nothing changes (on disk or here) and the error says why (for the log).
  boost::system::result<std::string, std::string> issue(const std::string& origin,
                                                        const std::optional<std::string>& app, const Needs& needs);

  // False when the origin had no grant. The same promise as issue: on disk, or no change and why.
  boost::system::result<bool, std::string> revoke(const std::string& origin);

  // Why the last issue or revoke could not be saved, for the log of whoever reports it.
  const std::string& last_save_error() const { return last_save_error_; }

  // Re-reads the repository (the file changed). Origins that lost their grant or token are reported.
  void reload();

  // Called with an origin whose grant was revoked or replaced, or whose AI changed, so its sessions end.
  void on_revoked(std::function<void(const std::string&)> fn) { revoked_ = std::move(fn); }

 private:
  void notify_lost(const std::vector<Grant>& before);
  // After a successful write: the file as it is now, or (if it can't be read back) `apply` to ours.
  void refresh(const std::function<void(std::vector<Grant>&)>& apply);

  GrantRepository& repo_;
  std::chrono::milliseconds last_used_interval_;
  std::vector<Grant> grants_;
  std::map<std::string, std::chrono::steady_clock::time_point> last_touch_;
  std::function<void(const std::string&)> revoked_;
  std::string last_save_error_;
  Sha256 sha256_;  // every page request's token is hashed
};

}  // namespace leuria::core
