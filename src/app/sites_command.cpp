#include "app/sites_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>
#include <vector>

#include "core/origin.hpp"
#include "core/plain_text.hpp"
#include "store/grants_file.hpp"
#include "store/home.hpp"

namespace leuria::app {

namespace {

// The home folder is made (0700) if it doesn't exist yet, as the engine would.
store::GrantsFile open_grants() {
  auto home = store::home_dir();
  if (auto ok = store::ensure_home(home); !ok) throw std::runtime_error(ok.error());
  return store::GrantsFile(home, [](const std::string& msg) { std::cerr << "leuria: " << msg << "\n"; });
}

}  // namespace

int sites_list() {
  try {
    auto file = open_grants();
    auto grants = file.load();
    if (grants.empty()) {
      std::cout << "No sites are connected.\n";
      return 0;
    }
    // The app name is the site's own choice: its ESC sequences, links and bidi controls are shown
    // as [U+XXXX], never sent to the terminal as they are.
    std::vector<std::string> apps;
    std::size_t w_origin = 6, w_app = 3;
    for (auto& g : grants) {
      apps.push_back(g.app ? core::marked_text(*g.app) : std::string("-"));
      w_origin = std::max(w_origin, g.origin.size());
      w_app = std::max(w_app, apps.back().size());
    }
    std::cout << fmt::format("{:<{}}  {:<{}}  {:<24}  {}\n", "ORIGIN", w_origin, "APP", w_app, "CREATED", "LAST USED");
    for (std::size_t i = 0; i < grants.size(); ++i) {
      const auto& g = grants[i];
      std::cout << fmt::format("{:<{}}  {:<{}}  {:<24}  {}\n", g.origin, w_origin, apps[i], w_app, g.created_at,
                               g.last_used_at.value_or("never"));
    }
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "leuria: " << e.what() << "\n";
    return 1;
  }
}

int sites_revoke(const std::string& raw) {
  auto origin = core::normalize_web_origin(raw);
  if (!origin) {
    std::cerr << "leuria: '" << raw << "' is not a site origin; write it like https://example.com.\n";
    return 1;
  }
  bool removed = false;
  try {
    auto grants = open_grants();
    removed = grants.remove(*origin);
  } catch (const std::exception& e) {
    // "Revoked" is printed only once the change is on disk; anything short of that says so.
    std::cerr << "leuria: Could not revoke " << *origin << " (" << e.what()
              << "); it stays connected. Check that the disk has free space, then try again.\n";
    return 1;
  }
  if (!removed) {
    std::cerr << "leuria: No grant for " << *origin << "; 'leuria sites' lists the connected sites.\n";
    return 1;
  }
  std::cout << "Revoked " << *origin << ".\n";
  return 0;
}

}  // namespace leuria::app
