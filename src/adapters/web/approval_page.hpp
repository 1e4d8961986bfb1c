// The CLI engine's approval page: plain words naming the site and app, Allow / Don't allow.
// Site-supplied text is only ever inserted through visible_text inside <bdi>, so markup, bidi
// controls and right-to-left scripts in a site's name can't change what the visitor reads. The
// site is its origin as the browser sent it: ASCII, an IDN in its punycode form (xn--…).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "core/pairing.hpp"
#include "http/message.hpp"

namespace leuria::web {

std::string html_escape(std::string_view text);

// `text` HTML-escaped, with each character that could reorder, break or hide what the visitor reads
// (bidi controls, C0/C1 controls, line separators, invisible characters) shown as "[U+XXXX]", and
// bytes that aren't UTF-8 as U+FFFD.
std::string visible_text(std::string_view text);

std::string approval_html(const std::string& id, const core::PairingView& request, const std::string& ai_name);
std::string missing_request_html();

struct PageAsset {
  std::string_view content_type;
  std::string_view body;
};
std::optional<PageAsset> page_asset(std::string_view name);

// X-Frame-Options DENY, a strict Content-Security-Policy, no caching, no sniffing, no referrer.
void apply_page_headers(http::Response& r);

}  // namespace leuria::web
