// Fuzz target: the bytes of one connection -> the server's own checks of each head
// (http/request_head.cpp scan_head, Beast's parser into http::Request (http/request_parser.cpp),
// check_head, the body limit) -> the engine's
// handler (adapters/web gate and router, or the MCP door), request after request on a keep-alive
// connection, as http/server.cpp does, but with every byte already received and no socket.
// Each input runs against a CLI engine and a desktop-app engine (silence on).
// Placeholders {sid} {chid} {chtok} {regtok} in the input become a live session's values.
//
// Checks: scan_head gives the same answer whether the head arrives whole or in two pieces, and
// what it accepts has only CRLF line ends and no folded line; the framing the handler sees has at
// most one Content-Length, at most one Transfer-Encoding (exactly "chunked", HTTP/1.1, never with
// a length) and at most 100 fields; a request whose Host is not exactly 127.0.0.1:5000 or
// localhost:5000 (once, origin-form target) gets the Host refusal (the app's engine: the empty 403
// of silence, at both doors, since a rebound page's GET may look local) and nothing else, and one
// whose Host is right never gets the Host refusal; in app mode an unknown web page gets the empty 403 of silence;
// CORS echoes only the request's own single Origin; a web page's POST that isn't JSON never
// succeeds; no 500 (an exception escaped a route); no CR, LF or NUL in a response header; the
// server's RequestParser reads every head and body as Beast's own message parser does (verdict,
// bytes taken, request line, fields, body, keep-alive, WebSocket upgrade), and a chunked body's
// trailers add no field.
#include <algorithm>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket/rfc6455.hpp>
#include <boost/json.hpp>

#include "adapters/web/gate.hpp"
#include "core/ascii.hpp"
#include "core/caller.hpp"
#include "core/host.hpp"
#include "core/origin.hpp"
#include "http/request_head.hpp"
#include "http/request_parser.hpp"
#include "support/world.hpp"

using namespace leuria;
namespace bhttp = boost::beast::http;
namespace json = boost::json;

namespace {

constexpr std::size_t kHeaderBytes = 16 * 1024;  // http::ServerLimits' defaults
constexpr std::size_t kHeaderFields = 100;
constexpr std::uint64_t kBodyBytes = 16 * 1024 * 1024;

// The head scanned in one go and in two pieces (the server rescans from `pos` as bytes arrive).
http::HeadScan scan(std::string_view bytes) {
  std::size_t pos = 0;
  const http::HeadScan whole = http::scan_head(bytes, pos);
  std::size_t pos2 = 0;
  const std::size_t cut = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]) * 7 % bytes.size();
  http::HeadScan piece = http::scan_head(bytes.substr(0, cut), pos2);
  if (piece.result == http::HeadScan::Result::need_more) piece = http::scan_head(bytes, pos2);
  fuzz::check(piece.result == whole.result && piece.end == whole.end, "scan_head depends on how bytes arrive");
  return whole;
}

// A complete head by the rules, checked independently of scan_head.
void check_clean_head(std::string_view head) {
  fuzz::check(head.size() >= 4 && head.ends_with("\r\n\r\n"), "a head ends with an empty line");
  for (std::size_t i = 0; i < head.size(); ++i) {
    if (head[i] == '\r') fuzz::check(i + 1 < head.size() && head[i + 1] == '\n', "a bare CR passed");
    if (head[i] == '\n') {
      fuzz::check(i > 0 && head[i - 1] == '\r', "a bare LF passed");
      if (i + 1 < head.size()) fuzz::check(head[i + 1] != ' ' && head[i + 1] != '\t', "a folded line passed");
    }
  }
}

void check_framing(unsigned version, const std::vector<http::Header>& headers) {
  std::size_t lengths = 0, codings = 0;
  for (auto& h : headers) {
    if (http::iequals(h.name, "content-length")) {
      ++lengths;
      fuzz::check(!h.value.empty() && h.value.find_first_not_of("0123456789") == std::string::npos,
                  "a Content-Length that is not digits passed");
    }
    if (http::iequals(h.name, "transfer-encoding")) {
      ++codings;
      fuzz::check(http::iequals(h.value, "chunked") && version == 11, "a Transfer-Encoding other than chunked passed");
    }
  }
  fuzz::check(lengths <= 1 && codings <= 1 && lengths + codings <= 1, "ambiguous framing passed");
  fuzz::check(headers.size() <= kHeaderFields, "over 100 header fields passed");
}

std::size_t count(const http::Request& req, std::string_view name) { return req.header_count(name); }

bool host_ok(const http::Request& req) {
  auto host = req.header("host");
  const std::string p = ":" + std::to_string(fuzz::kPort);
  const bool named = host && (*host == "127.0.0.1" + p || core::ascii_iequals(*host, "localhost" + p));
  const bool origin_form = req.target.starts_with("/") || (req.method == "OPTIONS" && req.target == "*");
  return count(req, "host") == 1 && named && origin_form;
}

bool is_host_refusal(const http::Response& r) { return r.status == 403 && r.body == R"({"error":"host not allowed"})"; }
bool is_silence(const http::Response& r) { return r.status == 403 && r.body.empty() && r.headers.empty(); }

void check_response(fuzz::World& w, const http::Request& req, const http::Response& res, bool was_known) {
  for (auto& h : res.headers) {
    fuzz::check(!h.name.empty() && h.name.find_first_of("\r\n\0: ", 0, 5) == std::string::npos, "a bad header name");
    fuzz::check(h.value.find_first_of("\r\n\0", 0, 3) == std::string::npos, "CR, LF or NUL in a response header");
  }
  fuzz::check(res.status >= 100 && res.status <= 599 && res.status != 500, "a 500: an exception escaped a route");

  const bool mcp = mcp_server::McpEndpoint::handles(req.path);
  // The Host rule, both ways (the MCP door has its own wording of the same refusal; the app's engine
  // gives silence instead).
  if (!host_ok(req)) {
    fuzz::check(w.app_mode ? is_silence(res) : is_host_refusal(res), "a request with a wrong Host got past the gate");
    return;
  }
  fuzz::check(!is_host_refusal(res), "a request with the right Host was refused as the wrong host");
  if (mcp) return;

  const std::size_t origins = count(req, "origin");
  auto origin = req.header("origin");
  auto acao = res.header("access-control-allow-origin");
  if (acao) fuzz::check(origins == 1 && *acao == *origin, "CORS echoes something other than the request's Origin");

  // Who the request is from, by its Origin (the normaliser has its own target and oracle).
  std::optional<std::string> web_origin;
  bool web = false;
  if (origins == 1) {
    auto parsed = core::parse_origin(*origin);
    if (parsed && parsed->is_web()) {
      const std::string o = parsed->serialized();
      if (!core::is_own_origin(o, fuzz::kPort) && !core::is_desktop_origin(o)) {
        web = true;
        web_origin = o;
      }
    }
  } else if (origins == 0) {
    auto sites = count(req, "sec-fetch-site");
    auto site = req.header("sec-fetch-site");
    web = sites > 1 || (site && *site != "same-origin" && *site != "none");
  }
  if (w.app_mode && web && !(web_origin && was_known))
    fuzz::check(is_silence(res), "an unknown page was answered in app mode");
  if (web && req.method == "POST" && res.status < 300)
    fuzz::check(web::is_json_content_type(req), "a page's POST that isn't JSON succeeded");

  auto type = res.header("content-type");
  if (type && *type == "application/json" && !res.stream && !res.body.empty()) {
    boost::system::error_code ec;
    json::parse(res.body, ec);
    fuzz::check(!ec, "a JSON answer that isn't JSON");
  }
}

http::Response answer(fuzz::World& w, http::Request& req) {
  const bool was_known = [&] {
    auto o = req.header("origin");
    auto n = o ? core::normalize_web_origin(*o) : std::nullopt;
    return n && w.known(*n);
  }();
  auto res = fuzz::run(w.ioc, w.handle(req));
  if (!res) fuzz::fail("the handler never answered");
  if (std::getenv("FUZZ_VERBOSE"))  // to see what a seed or a crash input reaches
    std::fprintf(stderr, "%s %s %s -> %u %s\n", w.app_mode ? "app" : "cli", req.method.c_str(), req.target.c_str(),
                 res->status, res->body.substr(0, 120).c_str());
  check_response(w, req, *res, was_known);
  return std::move(*res);
}

// One connection: requests until one closes it or the bytes run out mid-request.
void serve(fuzz::World& w, std::string_view rest) {
  for (int n = 0; n < 16 && !rest.empty(); ++n) {
    const http::HeadScan head = scan(rest);
    if (head.result != http::HeadScan::Result::complete) return;  // 400, 431, or waiting for more
    if (head.end > kHeaderBytes) return;                          // 431
    check_clean_head(rest.substr(0, head.end));

    // The server's parser (Beast's, reading into http::Request) beside Beast's own message parser as
    // the oracle: the same bytes must give the same verdicts, parts, body and connection rules.
    http::Request req;
    http::RequestParser parser(req);
    bhttp::request_parser<bhttp::string_body> oracle;
    for (auto* p : {static_cast<bhttp::basic_parser<true>*>(&parser), static_cast<bhttp::basic_parser<true>*>(&oracle)}) {
      p->header_limit(static_cast<std::uint32_t>(kHeaderBytes));
      p->body_limit(kBodyBytes);
      p->eager(true);
    }
    boost::beast::error_code ec, oracle_ec;
    const std::size_t used = parser.put(boost::asio::buffer(rest.data(), head.end), ec);
    const std::size_t oracle_used = oracle.put(boost::asio::buffer(rest.data(), head.end), oracle_ec);
    fuzz::check(ec == oracle_ec && used == oracle_used, "the server's parser and Beast's disagree on a head");
    bool too_large = ec == bhttp::error::body_limit;
    if (!too_large && (ec || !parser.is_header_done())) return;  // 400 from Beast
    fuzz::check(req.method == oracle.get().method_string() && req.target == oracle.get().target() &&
                    parser.version() == oracle.get().version(),
                "the server's parser read another request line than Beast's");
    fuzz::check(req.path + (req.query.empty() && req.target.find('?') == std::string::npos ? "" : "?" + req.query) == req.target,
                "path and query are not the target");
    {
      // Beast's list puts a repeated name after that name's last field; the server keeps the wire's
      // order. Grouped by name (case-insensitively, each group in its own order), the two agree.
      auto by_name = [](const http::Header& a, const http::Header& b) {
        return core::ascii_lower(a.name) < core::ascii_lower(b.name);
      };
      std::vector<http::Header> ours = req.headers, beasts;
      for (auto& f : oracle.get()) beasts.push_back({std::string(f.name_string()), std::string(f.value())});
      std::stable_sort(ours.begin(), ours.end(), by_name);
      std::stable_sort(beasts.begin(), beasts.end(), by_name);
      bool same = ours.size() == beasts.size();
      for (std::size_t i = 0; same && i < ours.size(); ++i)
        same = ours[i].name == beasts[i].name && ours[i].value == beasts[i].value;
      fuzz::check(same, "the server's parser read other fields than Beast's");
    }
    // Connection and Upgrade as Beast reads the head (its message gains a chunked body's trailers later).
    const bool oracle_keep = oracle.get().keep_alive();
    const bool oracle_upgrade = boost::beast::websocket::is_upgrade(oracle.get());
    const std::size_t head_fields = req.headers.size();
    if (http::check_head(parser.version(), req.headers, kHeaderFields).status) return;
    check_framing(parser.version(), req.headers);
    if (too_large) {
      req.refused = 413;
      answer(w, req);
      return;
    }
    rest.remove_prefix(used);
    // The body from what is left, as the server parses what is buffered and async_read the rest.
    while (!parser.is_done()) {
      const std::size_t took = parser.put(boost::asio::buffer(rest.data(), rest.size()), ec);
      const std::size_t oracle_took = oracle.put(boost::asio::buffer(rest.data(), rest.size()), oracle_ec);
      fuzz::check(ec == oracle_ec && took == oracle_took && parser.is_done() == oracle.is_done(),
                  "the server's parser and Beast's disagree on a body");
      rest.remove_prefix(took);
      if (ec == bhttp::error::need_more && rest.empty()) return;  // the client would still be sending
      if (ec == bhttp::error::body_limit) {
        req.refused = 413;
        req.body.clear();  // as the server: what came before the limit is not the request's
        answer(w, req);
        return;
      }
      if (ec && ec != bhttp::error::need_more) return;  // 400 malformed body
      if (took == 0 && !parser.is_done()) {
        // need_more with bytes left but nothing taken: Beast wants more than is there.
        return;
      }
    }
    auto message = oracle.release();
    fuzz::check(req.body == message.body(), "the server's parser read another body than Beast's");
    fuzz::check(req.headers.size() == head_fields, "a trailer field was added to the request's fields");
    const bool keep = http::keep_alive(req, parser.version());
    req.websocket = http::is_websocket_upgrade(req, parser.version());
    fuzz::check(keep == oracle_keep && req.websocket == oracle_upgrade,
                "Connection or Upgrade read otherwise than Beast reads them");
    http::Response res = answer(w, req);
    if ((req.websocket && res.upgrade) || res.stream) return;  // the connection is handed over
    if (!keep || res.close) return;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  for (bool app : {false, true}) {
    fuzz::World w(app);
    const std::string bytes = w.substitute(input);
    serve(w, bytes);
  }
  return 0;
}
