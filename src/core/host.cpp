#include "core/host.hpp"

#include <string>

namespace leuria::core {
namespace {
bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}
}  // namespace

bool host_allowed(std::string_view host, std::uint16_t port) {
  const std::string suffix = ":" + std::to_string(port);
  if (host.size() <= suffix.size() || host.substr(host.size() - suffix.size()) != suffix) return false;
  std::string_view name = host.substr(0, host.size() - suffix.size());
  return name == "127.0.0.1" || iequals(name, "localhost");
}

bool is_own_origin(std::string_view normalized_origin, std::uint16_t port) {
  const std::string p = std::to_string(port);
  return normalized_origin == "http://127.0.0.1:" + p || normalized_origin == "http://localhost:" + p;
}

}  // namespace leuria::core
