#include "adapters/web/approval_page.hpp"

#include <cstdint>
#include <fmt/format.h>

#include "core/plain_text.hpp"

namespace leuria::web {

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}


std::string visible_text(std::string_view text) { return html_escape(core::marked_text(text)); }

void apply_page_headers(http::Response& r) {
  r.set("X-Frame-Options", "DENY");
  r.set("Content-Security-Policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; "
        "frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
  r.set("X-Content-Type-Options", "nosniff");
  r.set("Referrer-Policy", "no-referrer");
  r.set("Cache-Control", "no-store");
}

namespace {

constexpr std::string_view kHead = R"(<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{title}</title><link rel="stylesheet" href="/connect/assets/approve.css"></head>
)";

std::string needs_sentence(const core::Needs& n) {
  std::string parts;
  auto add = [&](std::string_view s) {
    if (!parts.empty()) parts += ", ";
    parts += s;
  };
  if (n.tools) add("lets the AI use the site's own tools");
  if (n.images) add("sends images");
  if (n.effort) add(fmt::format("asks for {} effort", core::effort_word(*n.effort)));
  if (n.context) add(fmt::format("works with about {} tokens of context", *n.context));
  if (parts.empty()) return {};
  return "<p class=\"needs\">The site says it " + html_escape(parts) + ".</p>\n";
}

}  // namespace

std::string approval_html(const std::string& id, const core::PairingView& r, const std::string& ai_name) {
  const std::string site = "<bdi class=\"site\">" + visible_text(r.origin) + "</bdi>";
  const std::string app = r.app ? "<bdi class=\"app\">" + visible_text(*r.app) + "</bdi>" : std::string();
  std::string out = fmt::format(fmt::runtime(kHead), fmt::arg("title", "Leuria: connect a site?"));
  out += "<body data-request=\"" + html_escape(id) + "\"><main>\n";
  out += "<h1>Let " + site + " use your AI?</h1>\n";
  out += "<p>" + (app.empty() ? std::string("A page") : app) + " on " + site +
         " asks to connect to Leuria on this computer.</p>\n";
  out += "<p>If you allow it, the site can start conversations with your AI (<bdi>" + visible_text(ai_name) +
         "</bdi>) and offer it the site's own tools. It can't read your files or see your other sites. "
         "You can disconnect it at any time with <code>leuria sites revoke</code>.</p>\n";
  out += needs_sentence(r.needs);
  // Disabled until the script has seen the page shown for a second (see kScript).
  out += "<div class=\"actions\"><button id=\"allow\" type=\"button\" disabled>Allow</button>"
         "<button id=\"deny\" type=\"button\" disabled>Don't allow</button></div>\n";
  out += "<p id=\"status\" role=\"status\"></p>\n</main>\n<script src=\"/connect/assets/approve.js\"></script>\n"
         "</body></html>\n";
  return out;
}

std::string missing_request_html() {
  std::string out = fmt::format(fmt::runtime(kHead), fmt::arg("title", "Leuria: request not found"));
  out += "<body><main><h1>This request is no longer open</h1>\n"
         "<p>It was answered, it expired, or it never existed. If a site is still asking to connect, "
         "start again from that site.</p></main></body></html>\n";
  return out;
}

namespace {

constexpr std::string_view kScript = R"JS('use strict';
(function () {
  var id = document.body.getAttribute('data-request');
  var status = document.getElementById('status');
  var buttons = document.querySelectorAll('.actions button');
  var done = false;
  var busy = false;
  var armed = 0;
  function enable(on) { buttons.forEach(function (b) { b.disabled = !on; }); }
  function finish(text) {
    done = true;
    status.textContent = text;
    enable(false);
  }
  // A site chose when this tab opened (its claim did) and how long its own name is: it could have the
  // visitor clicking fast where Allow then appears. The buttons come alive only after the page has
  // been shown and focused for a second (again after each loss of focus), as browsers do for their
  // own permission prompts, so a click aimed at another page lands on nothing.
  function disarm() {
    clearTimeout(armed);
    if (!done && !busy) enable(false);
  }
  function arm() {
    disarm();
    if (done || document.visibilityState !== 'visible' || !document.hasFocus()) return;
    armed = setTimeout(function () { if (!done && !busy) enable(true); }, 1000);
  }
  document.addEventListener('visibilitychange', arm);
  window.addEventListener('blur', disarm);
  window.addEventListener('focus', arm);
  arm();
  function show(state) {
    if (state === 'allowed') finish('Connected. You can close this tab and go back to the site.');
    else if (state === 'denied') finish('Not connected. The site was told no.');
    else if (state === 'expired') finish('This request expired. Start again from the site if you still want to connect it.');
  }
  function decide(allow) {
    busy = true;
    enable(false);
    fetch('/connect/' + encodeURIComponent(id) + '/decide', {
      method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ allow: allow })
    }).then(function (r) {
      if (r.ok) return r.json().then(function (j) { show(j.decision); });
      if (r.status === 410) return finish('This request was already answered or has expired.');
      if (r.status === 503) return r.json().then(function (j) {
        status.textContent = j.error;  // not saved: nothing changed, so the visitor may answer again
        busy = false;
        arm();
      });
      finish('Something went wrong. Start again from the site.');
    }).catch(function () { finish('Leuria stopped running. Start it again, then retry from the site.'); });
  }
  document.getElementById('allow').addEventListener('click', function () { decide(true); });
  document.getElementById('deny').addEventListener('click', function () { decide(false); });
  function poll() {
    if (done) return;
    fetch('/connect/' + encodeURIComponent(id) + '/state').then(function (r) {
      if (r.status === 404) return finish('This request is no longer open.');
      return r.json().then(function (j) { show(j.status); });
    }).catch(function () {}).then(function () { if (!done) setTimeout(poll, 2000); });
  }
  setTimeout(poll, 2000);
})();
)JS";

constexpr std::string_view kStyle = R"CSS(:root { color-scheme: light dark; font-family: system-ui, sans-serif; }
body { margin: 0; display: grid; place-items: center; min-height: 100vh; }
main { max-width: 34rem; padding: 2rem; line-height: 1.5; }
h1 { font-size: 1.4rem; }
.site { font-weight: 600; }
.actions { display: flex; gap: 1rem; margin: 1.5rem 0; }
button { font: inherit; padding: .6rem 1.4rem; border-radius: .5rem; border: 1px solid #888; cursor: pointer; }
#allow { background: #1a7f37; color: #fff; border-color: #1a7f37; }
button:disabled { opacity: .5; cursor: default; }
)CSS";

}  // namespace

std::optional<PageAsset> page_asset(std::string_view name) {
  if (name == "approve.js") return PageAsset{"text/javascript; charset=utf-8", kScript};
  if (name == "approve.css") return PageAsset{"text/css; charset=utf-8", kStyle};
  return std::nullopt;
}

}  // namespace leuria::web
