// What the engine tells the visitor when pairing happens. CLI mode: a line in the terminal and the
// approval page opened in the browser. App mode: JSON lines on stdout for the desktop app.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

#include "core/pairing.hpp"

namespace leuria::app {

// One JSON line on stdout, flushed at once (the desktop app reads them as they come).
void write_json_line(const std::string& line);

class PairingAnnouncer final : public core::PairingObserver {
 public:
  PairingAnnouncer(bool app_mode, std::uint16_t port, bool open_browser)
      : app_mode_(app_mode), port_(port), open_browser_(open_browser) {}
  void on_request(const core::PairingView& request) override;
  void on_decided(const core::PairingView& request, core::Decision decision) override;

  // At most one approval tab this often: a page that makes many origins claim at once (iframes on many
  // subdomains) must not flood the visitor's browser with tabs. The questions past it are printed only.
  static constexpr std::chrono::seconds kOpenEvery{10};

 private:
  bool app_mode_;
  std::uint16_t port_;
  bool open_browser_;
  std::chrono::steady_clock::time_point last_open_{};
  bool opened_ = false;
};

// The app-mode lines that aren't about pairing.
std::string ready_line(std::uint16_t port);
std::string error_line(const std::string& message);

}  // namespace leuria::app
