#include "app/sites_command.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <iostream>
#include <stdexcept>

#include "core/origin.hpp"
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
    std::size_t w_origin = 6, w_app = 3;
    for (auto& g : grants) {
      w_origin = std::max(w_origin, g.origin.size());
      w_app = std::max(w_app, g.app.value_or("-").size());
    }
    std::cout << fmt::format("{:<{}}  {:<{}}  {:<24}  {}\n", "ORIGIN", w_origin, "APP", w_app, "CREATED", "LAST USED");
    for (auto& g : grants)
      std::cout << fmt::format("{:<{}}  {:<{}}  {:<24}  {}\n", g.origin, w_origin, g.app.value_or("-"), w_app,
                               g.created_at, g.last_used_at.value_or("never"));
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
  try {
    auto grants = open_grants();
    if (!grants.remove(*origin)) {
      std::cerr << "leuria: No grant for " << *origin << "; 'leuria sites' lists the connected sites.\n";
      return 1;
    }
    std::cout << "Revoked " << *origin << ".\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "leuria: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace leuria::app
