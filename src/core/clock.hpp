// Wall-clock timestamps as the files and the wire write them: ISO 8601 UTC with milliseconds,
// the form JavaScript's Date.prototype.toISOString produces.
#pragma once
#include <chrono>
#include <string>

namespace leuria::core {

std::string iso8601(std::chrono::system_clock::time_point t);
inline std::string now_iso8601() { return iso8601(std::chrono::system_clock::now()); }

}  // namespace leuria::core
