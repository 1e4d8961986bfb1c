#include "http/client.hpp"

#include "http/body_decoder.hpp"
#include "http/read_deadline.hpp"
#include "http/chars.hpp"
#include "transport/drained_read.hpp"
#include "transport/lookup.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
#include <boost/url/parse.hpp>

#include <sys/socket.h>

#include <cerrno>
#include <exception>
#include <optional>
#include <unordered_map>

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

// Unregisters an Abort's closer when the scope ends, however it ends: the closers point at the
// coroutine's locals (its connection, its lookup), and an exception from a read (the caller's on_data
// threw) skipped the plain unregistering, so a later abort() used a destroyed frame.
struct CloserScope {
  const std::shared_ptr<Abort>& abort;
  ~CloserScope() {
    if (abort) abort->on_abort({});
  }
};

constexpr std::size_t kMaxErrorBody = 64 * 1024;
constexpr std::size_t kReadBytes = 16 * 1024;
// What is read after the caller stopped (its stream's last event came before the body's end), so
// that the connection can be kept: the end normally follows at once.
constexpr std::size_t kFinishBytes = 64 * 1024;
constexpr std::chrono::seconds kFinishWithin{2};

// One response being read: the bytes read, the head's parser, and the body's framing.
struct Reading {
  beast::flat_buffer buffer;
  bhttp::response_parser<bhttp::empty_body> parser;  // the head only: the body is `body`'s
  BodyDecoder body;
  Reading() {
    // Room for what one read can bring: a flat_buffer that starts empty reads 512 bytes at a time
    // (Beast's read size is max(512, free capacity)), two or three streamed tokens a read.
    buffer.reserve(kReadBytes);
    parser.body_limit(boost::none);
  }
  // Once the head is read: how its body is framed.
  void head_done() {
    if (parser.is_done())
      body = BodyDecoder::none();  // 204, 304: no body whatever the fields say
    else if (parser.chunked())
      body = BodyDecoder::chunked();
    else if (auto n = parser.content_length())
      body = BodyDecoder::length(*n);
    else
      body = BodyDecoder::to_close();
  }
};

// How an exchange ended, for the connection's sake.
struct Outcome {
  ClientResult result;
  bool reusable = false;  // the whole answer was read and the server keeps the connection
  bool stopped = false;   // the caller stopped reading before the answer's end
  bool stale = false;     // nothing came back: on a kept connection, the server had closed it
};

// Decodes what r.buffer holds and hands the body's bytes over as one piece, where they lie (the
// framing between chunks is squeezed out in place: http/body_decoder.hpp). False when hand_over()
// said stop. The body is read here, not by bhttp::async_read_some: that stops after each chunk of a
// chunked body (one token of a model's stream) and completes through the scheduler, so every token
// cost a scheduler trip and a write of its own to the page even when a read had brought a hundred.
// Here a read is decoded whole and handed over at once; each piece still goes on as soon as it
// arrives. What came before a fault is handed over before the fault is told (ec).
template <class HandOver>
bool parse_buffered(Reading& r, beast::error_code& ec, HandOver&& hand_over) {
  const auto in = r.buffer.data();
  char* p = static_cast<char*>(in.data());
  const auto decoded = r.body.decode(p, in.size(), ec);
  const bool more = hand_over(std::string_view(p, decoded.body));
  r.buffer.consume(decoded.used);
  return more;
}

// A read of the body. On plain TCP it is drained (transport/drained_read.hpp; `fetch` asks the kernel
// to count what remains): a model streams a read per token, and the read after each one found nothing
// (bench scenario 7). Beast's stream adds nothing here: the body's deadline is `exchange`'s own.
template <class Token>
auto read_some(beast::tcp_stream& stream, asio::mutable_buffer space, Token&& token) {
  return transport::async_read_drained(stream.socket(), space, static_cast<Token&&>(token));
}
template <class Token>
auto read_some(beast::ssl_stream<beast::tcp_stream>& stream, asio::mutable_buffer space, Token&& token) {
  return stream.async_read_some(space, static_cast<Token&&>(token));
}

// What the body needs next, once what was read so far is parsed and handed over.
enum class Next {
  read,             // more of it, from the server
  wait_for_room,    // the caller's reader is full: wait (spec.before_read), then read
  end,              // the whole body is read
  stop,             // the caller stopped reading
  broke_off,        // the parser refused the bytes, or the body was cut short
  read_failed,      // the read failed (the deadline's cancel among the causes)
  threw,            // the parse, the caller's on_data or the next deadline threw: rethrown in the coroutine
};

// The body's reads, as one operation with a plain handler: it reads, parses and hands over until the
// body needs something else, and only then resumes the coroutine. With a co_await per read, each token
// (one read each, when a model streams) also made, pushed and popped a coroutine frame (Asio's
// use_awaitable initiates through a coroutine of its own) and resumed `exchange` through Asio's pump,
// on the path from the token's read to its write to the page (bench scenarios 2 and 7).
template <class Stream, class HandOver>
struct BodyReads {
  // In exchange's frame, which waits for the operation: it outlives every read.
  struct State {
    Stream& stream;
    Reading& r;
    HandOver& hand_over;
    ReadDeadline& deadline;
    bool& silent;
    std::chrono::seconds read_timeout;
    std::function<bool()>& must_wait;
    bool may_wait;
    Next next = Next::read;  // what the operation stopped for
    beast::error_code ec;    // why it broke off or failed
    std::exception_ptr thrown;
  };
  State* s;

  // Before each read: its deadline. A deadline that passed just as the last read completed cancelled
  // nothing, so only this read counts.
  static void expect_read(State& s) {
    s.silent = false;
    s.deadline.set(s.read_timeout);
  }

  // Parses what is buffered and says what comes next.
  static Next advance(State& s) {
    if (!parse_buffered(s.r, s.ec, s.hand_over)) return Next::stop;
    if (s.ec) return Next::broke_off;
    if (s.r.body.done()) return Next::end;
    if (s.may_wait && (!s.must_wait || s.must_wait())) return Next::wait_for_room;
    return Next::read;
  }

  // Started only when a read is due (exchange has called expect_read), so it never completes before
  // its first read does.
  template <class Self>
  void operator()(Self& self) {
    read(self);
  }
  template <class Self>
  void operator()(Self& self, beast::error_code rec, std::size_t n) {
    // What the parse, the caller or the next deadline throw would leave io_context::run(): it goes back
    // to the coroutine instead, which rethrows it where a co_await per read had it, for the request's wrapper.
    Next after;
    try {
      after = on_read(rec, n);
      if (after == Next::read) expect_read(*s);
    } catch (...) {
      s->thrown = std::current_exception();
      after = Next::threw;
    }
    if (after != Next::read) return finish(self, after);
    read(self);
  }

 private:
  Next on_read(beast::error_code rec, std::size_t n) {
    s->r.buffer.commit(n);
    if (rec == asio::error::eof) {
      // The end of a body that runs to the close, or a body cut short (the framing says which).
      if (!s->r.body.end_of_input()) {
        s->ec = bhttp::error::partial_message;
        return Next::broke_off;
      }
    } else if (rec) {
      s->ec = rec;
      return Next::read_failed;
    }
    return advance(*s);
  }
  // Outside the handler's try: once the read has taken `self`, the operation cannot complete here. What
  // its start can throw (an allocation) left io_context::run() with a co_await per read too.
  template <class Self>
  void read(Self& self) {
    read_some(s->stream, s->r.buffer.prepare(kReadBytes), std::move(self));
  }
  template <class Self>
  void finish(Self& self, Next after) {
    s->next = after;
    self.complete();
  }
};

template <class Stream>
asio::awaitable<Outcome> exchange(Stream& stream, beast::tcp_stream& tcp, const std::string& request,
                                  const ClientRequest& spec, std::function<bool(std::string_view)> on_data,
                                  Reading& r) {
  Outcome o;
  ClientResult& out = o.result;
  tcp.expires_after(spec.read_timeout);
  // One buffer: Beast's request serializer walked its buffer sequences for about 15,000
  // instructions a request, a third of a turn's start (bench scenario 5).
  auto [wec, wn] = co_await asio::async_write(stream, asio::buffer(request), asio::as_tuple(asio::use_awaitable));
  if (wec) {
    out.failure = Failure::no_answer;
    out.error = "The request could not be sent: " + wec.message();
    o.stale = true;
    co_return o;
  }
  auto [hec, hn] = co_await bhttp::async_read_header(stream, r.buffer, r.parser, asio::as_tuple(asio::use_awaitable));
  if (hec) {
    out.failure = Failure::no_answer;
    out.error = "No answer: " + hec.message();
    o.stale = hn == 0 && r.buffer.size() == 0 && hec != beast::error::timeout;
    co_return o;
  }
  out.status = r.parser.get().result_int();
  if (auto type = r.parser.get().find(bhttp::field::content_type); type != r.parser.get().end())
    out.content_type = type->value();
  r.head_done();
  const bool stream_body = out.status / 100 == 2 && on_data;
  // The body's reads share one deadline, kept lazily: moving it on after a read touches no timer.
  // Beast's per-operation timeout re-armed a timer for every read, and a model streams a read per
  // token (bench scenario 7: 1,000 streams at 10 tokens a second were 10,000 timer moves a second).
  // The wait for a full reader's room is not the server's silence, so it runs without a deadline.
  tcp.expires_never();
  // What each read asks of the request, kept in this frame: with 1,000 streams the request's own object
  // was one more cold line per token (bench scenario 7). A caller's must_wait holds a pointer or two,
  // so its copy is inline here too, as on_data's is (a copy, the parameter).
  const auto read_timeout = spec.read_timeout;
  const bool may_wait = stream_body && spec.before_read;
  std::function<bool()> must_wait;  // no ?: here: GCC 12 miscompiles class-type temporaries of one in coroutines
  if (may_wait) must_wait = spec.must_wait;
  bool silent = false;  // the deadline cancelled the read in flight
  ReadDeadline deadline(tcp.get_executor(), [&tcp, &silent] {
    silent = true;
    boost::system::error_code ignored;  // a socket an Abort closed meanwhile has nothing to cancel
    tcp.socket().cancel(ignored);
  });
  auto hand_over = [&](std::string_view data) {
    if (data.empty()) return true;
    if (stream_body) return on_data(data);
    // Past what is kept, the read stops (and fetch's bounded finish, or the close, takes over): a
    // body read to its end whatever its length let an endless error page hold the request.
    const std::size_t room = kMaxErrorBody - out.body.size();
    out.body.append(data.substr(0, room));
    if (data.size() <= room) return true;
    out.truncated = true;
    return false;
  };
  using Reads = BodyReads<Stream, decltype(hand_over)>;
  typename Reads::State reads{stream, r, hand_over, deadline, silent, read_timeout, must_wait, may_wait};
  reads.next = Reads::advance(reads);
  while (reads.next == Next::read || reads.next == Next::wait_for_room) {
    if (reads.next == Next::wait_for_room) {
      deadline.clear();
      co_await spec.before_read();
    }
    Reads::expect_read(reads);
    co_await asio::async_compose<const asio::use_awaitable_t<>&, void()>(Reads{&reads}, asio::use_awaitable);
  }
  if (reads.next == Next::threw) std::rethrow_exception(reads.thrown);
  switch (reads.next) {
    case Next::stop:
      o.stopped = true;
      co_return o;
    case Next::broke_off:
      out.failure = Failure::broke_off;
      out.error = reads.ec.message();
      co_return o;
    case Next::read_failed:
      out.failure = Failure::broke_off;
      // Plain if/else: GCC 12 mishandles class-type ?: temporaries inside coroutines.
      if (silent) out.error = "The server stopped answering";
      else out.error = reads.ec.message();
      co_return o;
    default:
      break;
  }
  out.complete = true;
  o.reusable = r.parser.keep_alive() && r.buffer.size() == 0;
  co_return o;
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

// Where the server is: its address when the URL gives one, else a lookup. The error is a sentence.
asio::awaitable<std::optional<std::string>> find_server(asio::any_io_executor ex, const boost::urls::url_view& url,
                                                        const std::string& host, const std::string& port,
                                                        const std::shared_ptr<Abort>& abort,
                                                        std::chrono::milliseconds deadline,
                                                        tcp::resolver::results_type& endpoints) {
  // An address written as one (127.0.0.1, [::1]: most local model servers) needs no lookup. A lookup
  // runs getaddrinfo on a thread of its own: two hops between threads before the request, most of
  // what a warm session's start added to its first token when every start looked up (bench scenario 5).
  // An abort that came first has no socket to close yet (a literal address suspends nowhere before the
  // connect): it ends the request here.
  if (abort && abort->aborted()) co_return "Stopped";
  if (auto literal = literal_endpoint(url, port)) {
    endpoints = tcp::resolver::results_type::create(*literal, host, port);
    co_return std::nullopt;
  }
  transport::Lookup lookup(ex);
  CloserScope scope{abort};
  if (abort) abort->on_abort([&lookup] { lookup.cancel(); });
  auto found = co_await lookup.run(host, port, deadline);  // the connect's bound: finding is part of it
  if (abort) abort->on_abort({});
  if (abort && abort->aborted()) co_return "Stopped";
  if (!found) co_return "Cannot find " + host + ": " + found.error();
  endpoints = std::move(*found);
  co_return std::nullopt;
}

}  // namespace

// Idle connections by server ("host:port"), oldest first.
// Connections move between a request and the pool by pointer: moving a beast::tcp_stream allocates
// a new one inside (its timer, its executor), and a turn moved it about seven times (callgrind).
using Connection = std::unique_ptr<beast::tcp_stream>;

struct ConnectionPool::State : std::enable_shared_from_this<ConnectionPool::State> {
  struct Idle {
    Connection stream;
    std::uint64_t id;
  };
  std::size_t per_server;
  std::unordered_map<std::string, std::vector<std::unique_ptr<Idle>>> idle;
  std::uint64_t next_id = 0;

  explicit State(std::size_t n) : per_server(n) {}

  // The most recently kept connection to `key` that is still open, or none.
  Connection take(const std::string& key) {
    auto it = idle.find(key);
    if (it == idle.end()) return nullptr;
    Connection out;
    while (!out && !it->second.empty()) {
      auto conn = std::move(it->second.back());
      it->second.pop_back();
      boost::system::error_code ec;
      conn->stream->socket().cancel(ec);  // its wait for the server's close ends (operation_aborted)
      // A close (or stray bytes) that came after the last turn of the loop: not a connection to send on.
      char c;
      const auto n = ::recv(conn->stream->socket().native_handle(), &c, 1, MSG_PEEK | MSG_DONTWAIT);
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        out = std::move(conn->stream);
      else
        conn->stream->socket().close(ec);
    }
    if (it->second.empty()) idle.erase(it);
    return out;
  }

  void give(const std::string& key, Connection stream) {
    stream->expires_never();
    auto& list = idle[key];
    boost::system::error_code ec;
    if (list.size() >= per_server) {
      list.front()->stream->socket().close(ec);
      list.erase(list.begin());
    }
    list.push_back(std::make_unique<Idle>(Idle{std::move(stream), ++next_id}));
    // Readable while idle: the server closed it (or sent what it shouldn't). Either way, it goes.
    list.back()->stream->socket().async_wait(
        tcp::socket::wait_read, [weak = weak_from_this(), key, id = next_id](boost::system::error_code wec) {
          auto self = weak.lock();
          if (wec || !self) return;
          self->drop(key, id);
        });
  }

  void drop(const std::string& key, std::uint64_t id) {
    auto it = idle.find(key);
    if (it == idle.end()) return;
    auto& list = it->second;
    for (auto c = list.begin(); c != list.end(); ++c) {
      if ((*c)->id != id) continue;
      boost::system::error_code ec;
      (*c)->stream->socket().close(ec);
      list.erase(c);
      break;
    }
    if (list.empty()) idle.erase(it);
  }

  void close_all() {
    boost::system::error_code ec;
    for (auto& [key, list] : idle)
      for (auto& c : list) c->stream->socket().close(ec);
    idle.clear();
  }
};

ConnectionPool::State& pool_state(ConnectionPool& pool) { return *pool.state_; }

ConnectionPool::ConnectionPool(std::size_t per_server)
    : state_(std::make_shared<State>(std::max<std::size_t>(1, per_server))) {}

ConnectionPool::~ConnectionPool() { state_->close_all(); }

std::size_t ConnectionPool::idle() const {
  std::size_t n = 0;
  for (auto& [key, list] : state_->idle) n += list.size();
  return n;
}

namespace {

// The caller stopped at its stream's last event ([DONE]), before the body's end, which a server that
// keeps the connection sends right after: read it (a little, briefly), then keep the connection.
asio::awaitable<void> finish_then_keep(Connection stream, std::unique_ptr<Reading> r,
                                       std::shared_ptr<ConnectionPool> pool, std::string key) {
  stream->expires_after(kFinishWithin);
  std::size_t left = kFinishBytes;
  auto discard = [&](std::string_view data) {
    const bool room = data.size() < left;
    left -= std::min(left, data.size());
    return room;
  };
  for (;;) {
    beast::error_code ec;
    if (!parse_buffered(*r, ec, discard) || ec) co_return;
    if (r->body.done()) break;
    auto [rec, n] = co_await stream->async_read_some(r->buffer.prepare(kReadBytes), asio::as_tuple(asio::use_awaitable));
    r->buffer.commit(n);
    if (rec) co_return;
  }
  if (r->parser.keep_alive() && r->buffer.size() == 0) pool_state(*pool).give(key, std::move(stream));
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (const char c : s)
    if (!is_token_char(c)) return false;
  return true;
}

// A line break would end the field (or the request line) early; a NUL, some servers end a string at.
bool one_line(std::string_view s) {
  for (const char c : s)
    if (c == '\r' || c == '\n' || c == '\0') return false;
  return true;
}

void append_field(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

}  // namespace

boost::system::result<std::string, std::string> request_text(std::string_view method, std::string_view target,
                                                              std::string_view host,
                                                              const std::vector<Header>& headers,
                                                              std::string_view body) {
  using Result = boost::system::result<std::string, std::string>;
  if (!is_token(method)) return Result(boost::system::in_place_error, "The request's method is not an HTTP token.");
  if (target.empty() || !one_line(target) || target.find(' ') != std::string_view::npos)
    return Result(boost::system::in_place_error, "The request's path holds a space or a line break.");
  if (!one_line(host)) return Result(boost::system::in_place_error, "The server's host name holds a line break.");
  // Host and User-Agent first, as fields the caller may replace.
  std::vector<std::pair<std::string_view, std::string_view>> fields{{"Host", host}, {"User-Agent", "leuria/" LEURIA_VERSION}};
  fields.reserve(headers.size() + 2);
  for (const Header& h : headers) {
    if (!is_token(h.name)) return Result(boost::system::in_place_error, "A header's name is not an HTTP token.");
    if (!one_line(h.value))
      return Result(boost::system::in_place_error, "The " + h.name + " header holds a line break.");
    if (iequals(h.name, "Content-Length") || iequals(h.name, "Transfer-Encoding")) continue;
    std::erase_if(fields, [&h](const auto& f) { return iequals(f.first, h.name); });
    fields.emplace_back(h.name, h.value);
  }
  const bool length = !body.empty() || method == "POST";
  std::string out;
  out.reserve(64 + target.size() + body.size() + headers.size() * 48);
  out.append(method).append(" ").append(target).append(" HTTP/1.1\r\n");
  for (const auto& [name, value] : fields) append_field(out, name, value);
  if (length) append_field(out, "Content-Length", std::to_string(body.size()));
  out.append("\r\n").append(body);
  return Result(boost::system::in_place_value, std::move(out));
}

asio::awaitable<ClientResult> fetch(asio::any_io_executor ex, ClientRequest spec,
                                    std::function<bool(std::string_view)> on_data, std::shared_ptr<Abort> abort) {
  ClientResult out;
  auto url = boost::urls::parse_uri(spec.url);
  if (!url || (url->scheme() != "http" && url->scheme() != "https")) {
    out.failure = Failure::bad_request;
    out.error = "Not an http(s) URL: " + spec.url;
    co_return out;
  }
  const bool tls = url->scheme() == "https";
  const std::string host = url->host();
  const std::string port = url->has_port() ? std::string(url->port()) : (tls ? "443" : "80");
  std::string target = url->encoded_path().empty() ? "/" : std::string(url->encoded_path());
  if (url->has_query()) target += "?" + std::string(url->encoded_query());

  std::string host_field = host;
  if (url->has_port()) host_field += ":" + port;
  auto text = request_text(spec.method, target, host_field, spec.headers, spec.body);
  if (!text) {
    out.failure = Failure::bad_request;
    out.error = text.error();
    co_return out;
  }
  spec.body.clear();
  spec.body.shrink_to_fit();  // the text holds it now
  const std::string& req = *text;
  CloserScope closer_scope{abort};  // whatever path, or exception, ends the fetch

  const std::string where = spec.url.substr(0, spec.url.find('?'));
  if (!tls) {
    // A kept connection first, so that a host name (localhost) is not looked up again either.
    ConnectionPool::State* pool = spec.pool ? &pool_state(*spec.pool) : nullptr;
    const std::string key = host + ':' + port;
    Connection stream = pool ? pool->take(key) : nullptr;
    bool reused = stream != nullptr;
    for (;;) {
      if (!stream) {
        tcp::resolver::results_type endpoints;
        auto lookup_error = co_await find_server(ex, *url, host, port, abort, spec.connect_timeout, endpoints);
        if (lookup_error) {
          out.failure = Failure::unreachable;
          out.error = *lookup_error;
          co_return out;
        }
        stream = std::make_unique<beast::tcp_stream>(ex);
        if (abort) abort->on_abort([&stream] { stream->socket().close(); });
        stream->expires_after(spec.connect_timeout);
        auto [cec, ep] = co_await stream->async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
        if (cec) {
          if (abort) abort->on_abort({});
          out.failure = Failure::unreachable;
          out.error = "Could not connect to " + where + ": " + cec.message();
          co_return out;
        }
        transport::count_what_remains(stream->socket());  // lets the body's reads be drained
      } else if (abort) {
        abort->on_abort([&stream] { stream->socket().close(); });
      }
      auto reading = std::make_unique<Reading>();
      auto o = co_await exchange(*stream, *stream, req, spec, on_data, *reading);
      if (abort) abort->on_abort({});
      const bool aborted = abort && abort->aborted();
      if (reused && o.stale && !aborted) {
        // The server had closed the kept connection as we sent (its idle timeout): nothing of the
        // request was answered, so it goes again on a new connection, once.
        stream.reset();
        reused = false;
        continue;
      }
      if (pool && !aborted && o.reusable) {
        pool->give(key, std::move(stream));
      } else if (pool && !aborted && o.stopped) {
        asio::co_spawn(ex, finish_then_keep(std::move(stream), std::move(reading), spec.pool, key), asio::detached);
      }
      co_return std::move(o.result);
    }
  }

  asio::ssl::context ctx(asio::ssl::context::tls_client);
  ctx.set_default_verify_paths();
  ctx.set_verify_mode(asio::ssl::verify_peer);
  beast::ssl_stream<beast::tcp_stream> stream(ex, ctx);
  if (!SSL_set_tlsext_host_name(stream.native_handle(), host.c_str())) {
    out.failure = Failure::bad_request;
    out.error = "TLS setup failed for " + host;
    co_return out;
  }
  stream.set_verify_callback(asio::ssl::host_name_verification(host));
  tcp::resolver::results_type endpoints;
  auto lookup_error = co_await find_server(ex, *url, host, port, abort, spec.connect_timeout, endpoints);
  if (lookup_error) {
    out.failure = Failure::unreachable;
    out.error = *lookup_error;
    co_return out;
  }
  if (abort) abort->on_abort([&stream] { beast::get_lowest_layer(stream).socket().close(); });
  auto& tcp = beast::get_lowest_layer(stream);
  tcp.expires_after(spec.connect_timeout);
  auto [cec, ep] = co_await tcp.async_connect(endpoints, asio::as_tuple(asio::use_awaitable));
  if (cec) {
    out.failure = Failure::unreachable;
    out.error = "Could not connect to " + where + ": " + cec.message();
  } else {
    auto [hec] = co_await stream.async_handshake(asio::ssl::stream_base::client, asio::as_tuple(asio::use_awaitable));
    if (hec) {
      out.failure = Failure::unreachable;
      out.error = "TLS handshake with " + host + " failed: " + hec.message();
    } else {
      Reading reading;
      auto o = co_await exchange(stream, tcp, req, spec, on_data, reading);
      out = std::move(o.result);
    }
  }
  if (abort) abort->on_abort({});
  co_return out;
}

asio::awaitable<WholeResult> fetch_whole(asio::any_io_executor ex, ClientRequest req, std::size_t max_bytes) {
  auto collected = std::make_shared<std::string>();
  std::function<bool(std::string_view)> on_data = [collected, max_bytes](std::string_view d) {
    collected->append(d);
    return collected->size() <= max_bytes;
  };
  auto res = co_await fetch(ex, std::move(req), on_data);
  WholeResult out;
  static_cast<ClientResult&>(out) = std::move(res);
  if (out.status / 100 == 2) {
    out.too_large = collected->size() > max_bytes;
    out.body = std::move(*collected);
  }
  co_return out;
}

}  // namespace leuria::http
