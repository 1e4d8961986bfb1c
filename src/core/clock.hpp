// Wall-clock timestamps as the files and the wire write them: ISO 8601 UTC with milliseconds,
// the form JavaScript's Date.prototype.toISOString produces.
#pragma once
#include <algorithm>
#include <chrono>
#include <string>

namespace leuria::core {

std::string iso8601(std::chrono::system_clock::time_point t);
inline std::string now_iso8601() { return iso8601(std::chrono::system_clock::now()); }

// A deadline for a timer that only keeps something alive (a stream's keep-alive comment, a tool
// channel's ping) need not be exact. Rounded up to a grid of min(1 s, period / 8), every such timer
// due in the same slot fires in one wakeup of the engine, not one each: 100 idle sessions hold 200
// of them every 15 s. Tests with short periods keep a fine grid.
inline std::chrono::steady_clock::time_point coalesced(std::chrono::steady_clock::time_point t,
                                                       std::chrono::steady_clock::duration period) {
  using D = std::chrono::steady_clock::duration;
  const D grid = std::min<D>(std::chrono::seconds(1), period / 8);
  if (grid <= D::zero()) return t;
  const D rem = t.time_since_epoch() % grid;
  return rem == D::zero() ? t : t + (grid - rem);
}

}  // namespace leuria::core
