// /session/*: a page's sessions with the visitor's AI, and their event stream.
#include <spdlog/spdlog.h>

#include "adapters/web/codec.hpp"
#include "adapters/web/routes.hpp"
#include "adapters/web/session_codec.hpp"
#include "core/session_book.hpp"

namespace leuria::web {

namespace asio = boost::asio;

namespace {

constexpr std::chrono::milliseconds kKeepAlive{15'000};
constexpr std::size_t kBatchBytes = 64 * 1024;  // at most this much is gathered into one write

http::Response not_found() { return error_response(404, "Session not found"); }

}  // namespace

std::string session_owner(const core::Caller& c) {
  return c.kind == core::CallerKind::web ? c.origin : std::string();
}

http::Response session_prepare(WebContext& ctx, const http::Request& req, const core::Caller& caller) {
  auto body = parse_body(req);
  if (!body) return body.error();
  auto request = parse_prepare(*body);
  if (!request) return request.error();
  const std::string origin = session_owner(caller);
  auto ai = core::choose_ai(origin.empty() ? nullptr : ctx.grants.find(origin), ctx.info.default_ai);
  auto s = ctx.sessions.prepare(origin, ai, std::move(*request));
  if (!s) return session_error(s.error());
  spdlog::info("event=session.prepared id={} origin={} ai={}", (*s)->id(), origin.empty() ? "local" : origin, ai.agent);
  boost::json::object o{{"sessionId", (*s)->id()},
                        {"status", core::status_word((*s)->status())},
                        {"registrationToken", registration_token(ctx.gate.port, (*s)->registration_secret())},
                        {"webmcpUrl", webmcp_url(ctx.gate.port)}};
  return json_response(201, o);
}

http::Response session_get(WebContext& ctx, const std::string& id, const core::Caller& caller) {
  auto s = ctx.sessions.find(id, session_owner(caller));
  if (!s) return not_found();
  return json_response(200, encode_session(*s, ctx.gate.port));
}

http::Response session_action(WebContext& ctx, const http::Request& req, const std::string& id,
                              const std::string& action, const core::Caller& caller) {
  auto s = ctx.sessions.find(id, session_owner(caller));
  if (!s) return not_found();
  auto body = parse_body(req);
  if (!body) return body.error();

  if (action == "approve") {
    if (auto r = s->approve(); !r) return session_error(r.error());
    spdlog::info("event=session.approved id={}", id);
  } else if (action == "prompt") {
    auto p = parse_prompt(*body);
    if (!p) return p.error();
    if (auto r = s->prompt(std::move(p->prompt), std::move(p->attachments)); !r) return session_error(r.error());
  } else if (action == "cancel-turn") {
    if (s->status() == core::SessionStatus::pending_approval)
      return error_response(400, "Session is not approved yet");
    s->cancel_turn();
  } else if (action == "cancel") {
    s->end(core::SessionStatus::cancelled);
  } else if (action == "close") {
    s->end(core::SessionStatus::completed);
  } else {
    return error_response(404, "Not found");
  }
  return json_response(200, encode_action(*s));
}

http::Response session_stream(WebContext& ctx, const std::string& id, const core::Caller& caller) {
  auto s = ctx.sessions.find(id, session_owner(caller));
  if (!s) return not_found();
  auto subscriber = s->subscribe();
  http::Response r;
  r.set("Content-Type", "text/event-stream");
  r.set("Cache-Control", "no-store");
  r.set("X-Accel-Buffering", "no");
  const std::uint16_t port = ctx.gate.port;
  r.stream = [subscriber, s, port](http::BodyWriter& w) -> asio::awaitable<void> {
    // While this loop waits, a backend's tokens are written from its read, at the end of the read
    // (Subscriber::deliver), and the loop is not woken for them: only when the socket could not take
    // them at once, and for every other event.
    // Their text is encoded straight into the writer's buffer, which the stream keeps: no allocation
    // and no copy per token. The closure holds two pointers, which std::function keeps inside the
    // subscriber rather than on the heap: with 1,000 streams each object a token touches is a cache
    // miss (bench scenario 7).
    subscriber->set_direct([&w, sub = subscriber.get()]() {
      std::string* data = w.begin_now();
      if (!data) return false;
      for (const std::size_t stop = data->size() + kBatchBytes; data->size() < stop;) {
        auto e = sub->take_text();
        if (!e) break;
        append_text_sse(*data, *e);
      }
      return w.end_now();
    });
    struct Undirect {  // the frame's own references: also when the frame is destroyed unfinished
      std::shared_ptr<core::Subscriber> sub;
      std::shared_ptr<core::Session> session;
      ~Undirect() {
        sub->set_direct({});
        session->page_left();  // this reader went: the session may now be unused
      }
    } undirect{subscriber, s};
    for (;;) {
      auto next = co_await subscriber->next(kKeepAlive);
      if (next.what == core::Subscriber::Next::What::end) break;
      if (next.what == core::Subscriber::Next::What::flush) {
        if (!co_await w.flush()) break;
        continue;
      }
      // A comment line keeps proxies and the browser patient, and finds readers that left.
      std::string data = ":\n\n";
      bool last = false;
      if (next.what != core::Subscriber::Next::What::idle) {
        data = encode_sse(next.event, *s, port);
        last = next.event.is_final();
        // What is queued behind it goes in the same write: one system call, and one read for the page
        // (turn_start after webmcp_ready; tool calls amid chunks).
        while (!last && data.size() < kBatchBytes) {
          auto more = subscriber->take();
          if (!more) break;
          append_sse(data, *more, *s, port);
          last = more->is_final();
        }
      }
      next.event = core::Event{};  // encoded: a slow reader's write waits holding one copy of its text
      if (!co_await w.write(std::move(data))) break;
      if (last) break;
    }
    if (subscriber->overflowed()) spdlog::info("event=stream.overflow session={}", s->id());
    subscriber->end();
  };
  return r;
}

}  // namespace leuria::web
