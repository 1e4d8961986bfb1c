// grants.json: {"grants":[{origin, app?, tokenHash, createdAt, lastUsedAt?, needs?, agent?, model?}]}.
// Every change is read-modify-write under grants.json.lock, written atomically (0600), and keeps
// fields and entries it doesn't understand. A file that isn't JSON is moved aside, never emptied.
// A change returns once it is on disk; otherwise it throws std::runtime_error with the old file in
// place (put back if only the folder's fsync failed), so nothing unsaved is ever acknowledged.
#pragma once
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "core/grants.hpp"

namespace leuria::store {

class GrantsFile final : public core::GrantRepository {
 public:
  // log: receives one plain sentence when the file had to be set aside.
  GrantsFile(std::filesystem::path home, std::function<void(const std::string&)> log);

  std::vector<core::Grant> load() override;
  core::Grant upsert(const core::Grant& grant) override;
  bool remove(const std::string& origin) override;
  void touch(const std::string& origin, const std::string& when) override;
  // The site's own AI (`leuria sites use`); nullopt agent = the visitor's default. False when the
  // origin has no grant.
  bool set_site_ai(const std::string& origin, const std::optional<std::string>& agent,
                   const std::optional<std::string>& model);

  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
  std::filesystem::path lock_path_;
  std::function<void(const std::string&)> log_;
};

}  // namespace leuria::store
