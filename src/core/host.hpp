// The Host check that blocks DNS rebinding: only 127.0.0.1:<port> and localhost:<port>.
#pragma once
#include <cstdint>
#include <string_view>

namespace leuria::core {

// True when the Host header names this engine exactly. No other spelling of loopback
// (127.1, [::1], 0x7f.1, trailing dots) and no missing port is accepted.
bool host_allowed(std::string_view host, std::uint16_t port);

// True for the origins of the engine's own pages: http://127.0.0.1:<port>, http://localhost:<port>.
bool is_own_origin(std::string_view normalized_origin, std::uint16_t port);

}  // namespace leuria::core
