#include "app/app_events.hpp"

#include <boost/json.hpp>
#include <cstdio>
#include <spdlog/spdlog.h>

#include "adapters/web/codec.hpp"
#include "app/opener.hpp"

namespace leuria::app {

namespace json = boost::json;

void write_json_line(const std::string& line) {
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

std::string ready_line(std::uint16_t port) {
  return json::serialize(json::object{{"type", "ready"}, {"port", port}});
}

std::string error_line(const std::string& message) {
  return json::serialize(json::object{{"type", "error"}, {"message", message}});
}

void PairingAnnouncer::on_request(const core::PairingView& r) {
  spdlog::info("event=pairing.request id={} origin={}", r.id, r.origin);
  if (app_mode_) {
    // The same fields as a request in GET /admin/pairing.
    json::object o = web::encode_request(r);
    o.emplace("type", "pairing");
    write_json_line(json::serialize(o));
    return;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + "/connect/" + r.id;
  std::printf("%s asks to use your AI. Approve or deny at %s\n", r.origin.c_str(), url.c_str());
  if (!open_browser_) {
    std::fflush(stdout);
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  if (opened_ && now - last_open_ < kOpenEvery) {
    std::printf("(Not opening another tab so soon after the last one: open the address above to decide.)\n");
    std::fflush(stdout);
    spdlog::info("event=pairing.open_held id={} origin={}", r.id, r.origin);
    return;
  }
  std::fflush(stdout);
  opened_ = true;
  last_open_ = now;
  open_in_browser(url);
}

void PairingAnnouncer::on_decided(const core::PairingView& r, core::Decision d) {
  spdlog::info("event=pairing.decided id={} origin={} decision={}", r.id, r.origin, web::decision_word(d));
  if (!app_mode_) return;
  json::object o{{"type", "pairing_decided"}, {"requestId", r.id}, {"origin", r.origin},
                 {"decision", web::decision_word(d)}};
  write_json_line(json::serialize(o));
}

}  // namespace leuria::app
