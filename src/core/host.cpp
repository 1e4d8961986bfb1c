#include "core/host.hpp"

#include <string>

#include "core/ascii.hpp"

namespace leuria::core {

bool host_allowed(std::string_view host, std::uint16_t port) {
  const std::string suffix = ":" + std::to_string(port);
  if (host.size() <= suffix.size() || host.substr(host.size() - suffix.size()) != suffix) return false;
  std::string_view name = host.substr(0, host.size() - suffix.size());
  return name == "127.0.0.1" || ascii_iequals(name, "localhost");
}

bool is_own_origin(std::string_view normalized_origin, std::uint16_t port) {
  const std::string p = std::to_string(port);
  return normalized_origin == "http://127.0.0.1:" + p || normalized_origin == "http://localhost:" + p;
}

}  // namespace leuria::core
