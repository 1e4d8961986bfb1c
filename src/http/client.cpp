#include "http/client.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include <optional>

namespace leuria::http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace bhttp = beast::http;
using asio::ip::tcp;

void Abort::abort() {
  aborted_ = true;
  if (closer_) closer_();
}

namespace {

constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kReadBytes = 16 * 1024;

template <class Stream>
asio::awaitable<ClientResult> exchange(Stream& stream, beast::tcp_stream& tcp, bhttp::request<bhttp::string_body>& req,
                                       const ClientRequest& spec, std::function<bool(std::string_view)>& on_data) {
  ClientResult out;
  tcp.expires_after(spec.read_timeout);
  auto [wec, wn] = co_await bhttp::async_write(stream, req, asio::as_tuple(asio::use_awaitable));
  if (wec) {
    out.error = "The request could not be sent: " + wec.message();
    co_return out;
  }
  // Room for what one read can bring: a flat_buffer that starts empty reads 512 bytes at a time
  // (Beast's read size is max(512, free capacity)), two or three streamed tokens a read.
  beast::flat_buffer buffer;
  buffer.reserve(kReadBytes);
  bhttp::response_parser<bhttp::buffer_body> parser;
  parser.body_limit(boost::none);
  auto [hec, hn] = co_await bhttp::async_read_header(stream, buffer, parser, asio::as_tuple(asio::use_awaitable));
  if (hec) {
    out.error = "No answer: " + hec.message();
    co_return out;
  }
  out.status = parser.get().result_int();
  const bool stream_body = out.status / 100 == 2 && on_data;
  char chunk[16384];
  std::size_t got = 0;  // body bytes in chunk, not yet handed over
  auto hand_over = [&] {
    bool more = true;
    if (got > 0 && stream_body)
      more = on_data(std::string_view(chunk, got));
    else if (got > 0 && out.body.size() < kMaxErrorBody)
      out.body.append(chunk, std::min(got, kMaxErrorBody - out.body.size()));
    got = 0;
    return more;
  };
  // The body is parsed here, not by bhttp::async_read_some: that stops after each chunk of a chunked
  // body (one token of a model's stream) and completes through the scheduler, so every token cost a
  // scheduler trip and a write of its own to the page even when a read had brought a hundred. Here
  // a read is parsed whole and handed over at once; each piece still goes on as soon as it arrives.
  for (;;) {
    beast::error_code ec;
    while (!parser.is_done() && buffer.size() > 0) {
      parser.get().body().data = chunk + got;
      parser.get().body().size = sizeof chunk - got;
      const std::size_t used = parser.put(buffer.data(), ec);
      buffer.consume(used);
      got = sizeof chunk - parser.get().body().size;
      if (ec == bhttp::error::need_buffer || got == sizeof chunk) {
        ec = {};
        if (!hand_over()) co_return out;
        continue;
      }
      if (ec == bhttp::error::need_more) ec = {};
      if (ec || used == 0) break;
    }
    if (!hand_over()) co_return out;
    if (ec) {
      out.error = "The answer broke off: " + ec.message();
      co_return out;
    }
    if (parser.is_done()) break;
    if (stream_body && spec.before_read) co_await spec.before_read();
    tcp.expires_after(spec.read_timeout);
    auto [rec, n] = co_await stream.async_read_some(buffer.prepare(kReadBytes), asio::as_tuple(asio::use_awaitable));
    buffer.commit(n);
    if (rec == asio::error::eof) {
      // The end of a body that runs to the close, or a body cut short (the parser says which).
      parser.put_eof(ec);
      if (ec) {
        out.error = "The answer broke off: " + ec.message();
        co_return out;
      }
    } else if (rec) {
      out.error = rec == beast::error::timeout ? "The server stopped answering" : "The answer broke off: " + rec.message();
      co_return out;
    }
  }
  out.complete = true;
  co_return out;
}

// The endpoint of a URL whose host is an IP address, with a numeric port.
std::optional<tcp::endpoint> literal_endpoint(const boost::urls::url_view& url, const std::string& port) {
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const unsigned long n = std::stoul(port);
  if (n == 0 || n > 65535) return std::nullopt;
  if (url.host_type() == boost::urls::host_type::ipv4) {
    const auto a = url.host_ipv4_address();
    return tcp::endpoint(asio::ip::address_v4(a.to_uint()), static_cast<unsigned short>(n));
  }
  if (url.host_type() == boost::urls::host_type::ipv6) {
    const auto a = url.host_ipv6_address();
    return tcp::endpoint(asio::ip::address_v6(a.to_bytes()), static_cast<unsigned short>(n));
  }
  return std::nullopt;
}

}  // namespace

asio::awaitable<ClientResult> fetch(asio::any_io_executor ex, ClientRequest spec,
                                    std::function<bool(std::string_view)> on_data, std::shared_ptr<Abort> abort) {
  ClientResult out;
  auto url = boost::urls::parse_uri(spec.url);
  if (!url || (url->scheme() != "http" && url->scheme() != "https")) {
    out.error = "Not an http(s) URL: " + spec.url;
    co_return out;
  }
  const bool tls = url->scheme() == "https";
  const std::string host = url->host();
  const std::string port = url->has_port() ? std::string(url->port()) : (tls ? "443" : "80");
  std::string target = url->encoded_path().empty() ? "/" : std::string(url->encoded_path());
  if (url->has_query()) target += "?" + std::string(url->encoded_query());

  // An address written as one (127.0.0.1, [::1]: most local model servers) needs no lookup. Asio's
  // resolver runs getaddrinfo on a thread of its own: two hops between threads before every request,
  // most of what a warm session's start added to its first token (bench scenario 5).
  tcp::resolver::results_type endpoints;
  if (auto literal = literal_endpoint(*url, port)) {
    endpoints = tcp::resolver::results_type::create(*literal, host, port);
  } else {
    tcp::resolver resolver(ex);
    if (abort) abort->on_abort([&resolver] { resolver.cancel(); });
    auto [rec, found] = co_await resolver.async_resolve(host, port, asio::as_tuple(asio::use_awaitable));
    if (abort && abort->aborted()) {
      abort->on_abort({});
      out.error = "Stopped";
      co_return out;
    }
    if (rec) {
      out.error = "Cannot find " + host + ": " + rec.message();
      co_return out;
    }
    endpoints = std::move(found);
  }

  bhttp::request<bhttp::string_body> req{bhttp::string_to_verb(spec.method), target, 11};
  req.set(bhttp::field::host, url->has_port() ? host + ":" + port : host);
  req.set(bhttp::field::user_agent, "leuria/" LEURIA_VERSION);
  for (auto& h : spec.headers) req.set(h.name, h.value);
  req.body() = std::move(spec.body);
  if (!req.body().empty() || spec.method == "POST") req.prepare_payload();

  const std::string where = spec.url.substr(0, spec.url.find('?'));
  if (!tls) {
    beast::tcp_stream stream(ex);
    if (abort) abort->on_abort([&stream] { stream.socket().close(); });
    stream.expires_after(spec.connect_timeout);
    auto [cec, ep] = co_await stream.async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
    if (cec) {
      out.error = "Could not connect to " + where + ": " + cec.message();
    } else {
      out = co_await exchange(stream, stream, req, spec, on_data);
    }
    if (abort) abort->on_abort({});
    co_return out;
  }

  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(ex, ctx);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    out.error = "TLS setup failed for " + host;
    co_return out;
  }
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
  if (abort) abort->on_abort([&stream] { beast::get_lowest_layer(stream).socket().close(); });
  auto& tcp = beast::get_lowest_layer(stream);
  tcp.expires_after(spec.connect_timeout);
  auto [cec, ep] = co_await tcp.async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
  if (cec) {
    out.error = "Could not connect to " + where + ": " + cec.message();
  } else {
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(asio::use_awaitable));
    if (hec)
      out.error = "TLS handshake with " + host + " failed: " + hec.message();
    else
      out = co_await exchange(stream, tcp, req, spec, on_data);
  }
  if (abort) abort->on_abort({});
  co_return out;
}

}  // namespace leuria::http
