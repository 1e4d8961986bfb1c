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
  auto admin = web::admit(request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", "tauri://localhost"}}),
                          app_mode(), nobody_known);
  EXPECT_FALSE(admin.refusal);
  EXPECT_EQ(admin.caller.kind, core::CallerKind::desktop);
  auto elsewhere = web::admit(request("/health", {{"Host", "127.0.0.1:5000"}, {"Origin", "tauri://localhost"}}),
                              app_mode(), nobody_known);
  ASSERT_TRUE(elsewhere.refusal);
  auto cli = web::admit(request("/admin/pairing", {{"Host", "127.0.0.1:5000"}, {"Origin", "http://tauri.localhost"}}),
                        cli_mode(), nobody_known);
  EXPECT_FALSE(cli.refusal);
  EXPECT_EQ(cli.caller.kind, core::CallerKind::web);
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
