#include <gtest/gtest.h>

#include "adapters/web/gate.hpp"

using namespace leuria;

namespace {

http::Request request(std::string path, std::vector<http::Header> headers, std::string method = "GET") {
  http::Request r;
  r.method = std::move(method);
  r.target = path;
  r.path = std::move(path);
  r.headers = std::move(headers);
  return r;
}

web::GateConfig app_mode() { return {5000, true, true, std::string(40, 'k')}; }
web::GateConfig cli_mode() { return {5000, false, false, {}}; }
bool nobody_known(const std::string&) { return false; }

}  // namespace

TEST(Gate, HostMustNameTheEngine) {
  for (auto hosts : std::vector<std::vector<http::Header>>{
           {}, {{"Host", "evil.example:5000"}}, {{"Host", "127.0.0.1:5000"}, {"Host", "127.0.0.1:5000"}}}) {
    auto a = web::admit(request("/health", hosts), cli_mode(), nobody_known);
    ASSERT_TRUE(a.refusal);
    EXPECT_EQ(a.refusal->status, 403u);
    EXPECT_EQ(a.refusal->body, R"({"error":"host not allowed"})");
  }
  auto absolute = request("/health", {{"Host", "127.0.0.1:5000"}});
  absolute.target = "http://evil.example/health";
  EXPECT_TRUE(web::admit(absolute, cli_mode(), nobody_known).refusal);
}

TEST(Gate, OddOriginsAreRefused) {
  for (const char* o : {"null", "file://", "chrome-extension://abc", "garbage"}) {
    auto a = web::admit(request("/health", {{"Host", "127.0.0.1:5000"}, {"Origin", o}}), cli_mode(), nobody_known);
    ASSERT_TRUE(a.refusal) << o;
    EXPECT_EQ(a.refusal->body, R"({"error":"origin not allowed"})");
  }
  auto two = web::admit(request("/health", {{"Host", "127.0.0.1:5000"},
                                            {"Origin", "https://a.example"},
                                            {"Origin", "https://b.example"}}),
                        cli_mode(), nobody_known);
  ASSERT_TRUE(two.refusal);
}

TEST(Gate, SilenceIsAnEmpty403InAppMode) {
  auto a = web::admit(request("/health", {{"Host", "127.0.0.1:5000"}, {"Origin", "https://a.example"}}), app_mode(),
                      nobody_known);
  ASSERT_TRUE(a.refusal);
  EXPECT_EQ(a.refusal->status, 403u);
  EXPECT_TRUE(a.refusal->body.empty());
  EXPECT_TRUE(a.refusal->headers.empty());

  auto known = web::admit(request("/health", {{"Host", "127.0.0.1:5000"}, {"Origin", "https://a.example"}}),
                          app_mode(), [](const std::string& o) { return o == "https://a.example"; });
  EXPECT_FALSE(known.refusal);
  EXPECT_TRUE(known.cors);

  auto cli = web::admit(request("/health", {{"Host", "localhost:5000"}, {"Origin", "https://a.example"}}), cli_mode(),
                        nobody_known);
  EXPECT_FALSE(cli.refusal);
}

TEST(Gate, DesktopOriginsNeedTheAdminApi) {
  const http::Header token{"Authorization", "Bearer " + std::string(40, 'k')};
  auto admin = web::admit(
      request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", "tauri://localhost"}, token}), app_mode(),
      nobody_known);
  EXPECT_FALSE(admin.refusal);
  EXPECT_TRUE(admin.cors);
  EXPECT_EQ(admin.caller.kind, core::CallerKind::desktop);
  auto elsewhere = web::admit(request("/health", {{"Host", "127.0.0.1:5000"}, {"Origin", "tauri://localhost"}}),
                              app_mode(), nobody_known);
  ASSERT_TRUE(elsewhere.refusal);
  auto cli = web::admit(request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", "http://tauri.localhost"}}),
                        cli_mode(), nobody_known);
  EXPECT_FALSE(cli.refusal);
  EXPECT_EQ(cli.caller.kind, core::CallerKind::web);
}

// Any page served as tauri.localhost (a local server on port 80, say) must not read the admin API's 401:
// without the admin token only a preflight, which never carries it, gets CORS there.
TEST(Gate, ADesktopOriginWithoutTheAdminTokenIsAPageItDoesNotKnow) {
  for (const char* origin : {"http://tauri.localhost", "https://tauri.localhost"}) {
    for (const char* bearer : {"", "Bearer wrong"}) {
      std::vector<http::Header> h{{"Host", "127.0.0.1:5000"}, {"Origin", origin}};
      if (*bearer) h.push_back({"Authorization", bearer});
      auto a = web::admit(request("/admin/pairing", h), app_mode(), nobody_known);
      ASSERT_TRUE(a.refusal) << origin << " " << bearer;
      EXPECT_TRUE(a.silenced);
      EXPECT_TRUE(a.refusal->body.empty());
      EXPECT_FALSE(a.cors);
    }
    auto preflight = web::admit(request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", origin}}, "OPTIONS"),
                                app_mode(), nobody_known);
    EXPECT_FALSE(preflight.refusal);
    EXPECT_TRUE(preflight.cors);
  }
  auto tauri = web::admit(request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", "tauri://localhost"}}),
                          app_mode(), nobody_known);
  ASSERT_TRUE(tauri.refusal);
  EXPECT_FALSE(tauri.cors);
}

// DNS rebinding: a page at http://rebound.example:5000, its name now 127.0.0.1, reads its same-origin
// answers. In app mode it must not read "host not allowed" (Leuria is there). Its GET from an http: page
// carries no Origin and no Sec-Fetch-*, so a wrong Host without them is silenced too.
TEST(Gate, AWrongHostIsSilenceInAppMode) {
  const std::vector<std::vector<http::Header>> browser{
      {{"Host", "rebound.example:5000"}},
      {{"Host", "rebound.example:5000"}, {"Sec-Fetch-Site", "same-origin"}},
      {{"Host", "rebound.example:5000"}, {"Origin", "http://rebound.example:5000"}},
      {{"Host", "rebound.example:5000"}, {"Origin", "null"}},
      {{"Host", "rebound.example:5000"}, {"Sec-Fetch-Site", "none"}},
  };
  for (const auto& h : browser) {
    auto app = web::admit(request("/health", h), app_mode(), nobody_known);
    ASSERT_TRUE(app.refusal);
    EXPECT_EQ(app.refusal->status, 403u);
    EXPECT_TRUE(app.silenced);
    EXPECT_TRUE(app.refusal->body.empty());
    EXPECT_TRUE(app.refusal->headers.empty());
    auto cli = web::admit(request("/health", h), cli_mode(), nobody_known);
    ASSERT_TRUE(cli.refusal);
    EXPECT_EQ(cli.refusal->body, R"({"error":"host not allowed"})");
  }
  auto absolute = request("/health", {{"Host", "127.0.0.1:5000"}});
  absolute.target = "http://evil.example/health";
  EXPECT_TRUE(web::admit(absolute, app_mode(), nobody_known).silenced);
}

TEST(Gate, PreflightListsMethodsHeadersAndMaxAge) {
  auto a = web::admit(request("/session/prepare", {{"Host", "127.0.0.1:5000"}, {"Origin", "https://a.example"}}, "OPTIONS"),
                      cli_mode(), nobody_known);
  auto r = web::preflight(a, false);
  EXPECT_EQ(r.status, 204u);
  EXPECT_EQ(r.header("Access-Control-Allow-Origin"), "https://a.example");
  EXPECT_EQ(r.header("Access-Control-Allow-Methods"), "GET, POST, OPTIONS");
  EXPECT_EQ(r.header("Access-Control-Allow-Headers"), "Content-Type, Authorization");
  EXPECT_EQ(r.header("Access-Control-Max-Age"), "600");
  EXPECT_EQ(r.header("Access-Control-Allow-Private-Network"), "true");
  EXPECT_EQ(r.header("Vary"), "Origin");
  EXPECT_EQ(web::preflight(a, true).header("Access-Control-Allow-Methods"), "GET, POST, DELETE, OPTIONS");
}

namespace {

http::Request no_origin(std::string path, std::vector<std::string> fetch_sites, std::string method = "GET") {
  std::vector<http::Header> h{{"Host", "127.0.0.1:5000"}};
  for (auto& s : fetch_sites) h.push_back({"Sec-Fetch-Site", s});
  return request(std::move(path), std::move(h), std::move(method));
}

}  // namespace

TEST(Gate, ABrowserWithoutOriginFromAnotherSiteIsAnUnknownPage) {
  for (const char* site : {"cross-site", "same-site"}) {
    // App mode: the same empty 403 as any unknown origin, even if "" were somehow known.
    auto app = web::admit(no_origin("/health", {site}), app_mode(), [](const std::string&) { return true; });
    ASSERT_TRUE(app.refusal) << site;
    EXPECT_EQ(app.refusal->status, 403u);
    EXPECT_TRUE(app.refusal->body.empty());
    EXPECT_TRUE(app.refusal->headers.empty());

    // CLI mode: a web page, with no origin to echo in CORS headers.
    auto cli = web::admit(no_origin("/connect/AAAA", {site}), cli_mode(), nobody_known);
    EXPECT_FALSE(cli.refusal) << site;
    EXPECT_EQ(cli.caller.kind, core::CallerKind::web);
    EXPECT_TRUE(cli.caller.origin.empty());
    EXPECT_FALSE(cli.cors);
    EXPECT_FALSE(web::preflight(cli, false).header("Access-Control-Allow-Origin"));
  }
  // Two values are no browser's: not local either.
  EXPECT_EQ(web::admit(no_origin("/health", {"none", "cross-site"}), cli_mode(), nobody_known).caller.kind,
            core::CallerKind::web);
}

TEST(Gate, TheVisitorsOwnNavigationStaysLocal) {
  for (const char* site : {"none", "same-origin"}) {
    auto a = web::admit(no_origin("/connect/AAAA", {site}), app_mode(), nobody_known);
    EXPECT_FALSE(a.refusal) << site;
    EXPECT_EQ(a.caller.kind, core::CallerKind::local) << site;
  }
  EXPECT_EQ(web::admit(no_origin("/health", {}), app_mode(), nobody_known).caller.kind, core::CallerKind::local);
}

TEST(Gate, APagesPostMustBeJson) {
  const core::Caller page{core::CallerKind::web, "https://a.example", "https://a.example"};
  const core::Caller anonymous{core::CallerKind::web, {}, {}};
  auto post = [](std::vector<std::string> types) {
    std::vector<http::Header> h{{"Host", "127.0.0.1:5000"}};
    for (auto& t : types) h.push_back({"Content-Type", t});
    return request("/session/prepare", std::move(h), "POST");
  };
  for (auto types : std::vector<std::vector<std::string>>{
           {}, {"text/plain"}, {"text/plain;charset=UTF-8"}, {"application/x-www-form-urlencoded"},
           {"multipart/form-data; boundary=x"}, {"application/jsonx"}, {"application/vnd.api+json"}, {""},
           {"application/json", "text/plain"}}) {
    for (const auto& caller : {page, anonymous}) {
      auto r = web::require_json_body(post(types), caller);
      ASSERT_TRUE(r) << (types.empty() ? "(none)" : types[0]);
      EXPECT_EQ(r->status, 415u);
      EXPECT_EQ(r->body, R"({"error":"Content-Type must be application/json"})");
    }
  }
  for (const char* t : {"application/json", "application/json; charset=utf-8", "Application/JSON ;charset=UTF-8",
                        " application/json "})
    EXPECT_FALSE(web::require_json_body(post({t}), page)) << t;
  // Only a web page's POSTs: a local process, the engine's own page and GETs are as before.
  EXPECT_FALSE(web::require_json_body(post({}), core::Caller{}));
  EXPECT_FALSE(web::require_json_body(post({"text/plain"}), core::Caller{core::CallerKind::own_page, "x", "x"}));
  EXPECT_FALSE(web::require_json_body(request("/health", {{"Host", "127.0.0.1:5000"}}), page));
}
