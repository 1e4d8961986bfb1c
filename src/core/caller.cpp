#include "core/caller.hpp"

#include "core/host.hpp"
#include "core/origin.hpp"

namespace leuria::core {

bool is_desktop_origin(std::string_view o) {
  return o == "tauri://localhost" || o == "http://tauri.localhost" || o == "https://tauri.localhost";
}

Caller classify_caller(std::optional<std::string_view> origin_header, std::uint16_t port,
                       std::optional<std::string_view> sec_fetch_site) {
  Caller c;
  if (!origin_header) {
    // A local process sends no Sec-Fetch-Site; a value we don't know counts as another site,
    // so a browser's new word never makes a page local.
    if (sec_fetch_site && *sec_fetch_site != "same-origin" && *sec_fetch_site != "none") c.kind = CallerKind::web;
    return c;
  }
  c.raw_origin = std::string(*origin_header);
  auto parsed = parse_origin(*origin_header);
  if (!parsed) {
    c.kind = CallerKind::bad_origin;
    return c;
  }
  c.origin = parsed->serialized();
  if (is_desktop_origin(c.origin))
    c.kind = CallerKind::desktop;
  else if (!parsed->is_web())
    c.kind = CallerKind::bad_origin;
  else if (is_own_origin(c.origin, port))
    c.kind = CallerKind::own_page;
  else
    c.kind = CallerKind::web;
  return c;
}

}  // namespace leuria::core
