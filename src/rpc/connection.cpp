#include "rpc/connection.hpp"

#include "json/read.hpp"
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/json.hpp>

namespace leuria::rpc {

namespace asio = boost::asio;
namespace json = boost::json;

struct Connection::Pending {
  explicit Pending(asio::any_io_executor ex) : done(ex, asio::steady_timer::time_point::max()) {}
  asio::steady_timer done;  // cancelled when the result is in
  std::optional<Result> result;
};

Connection::Connection(asio::any_io_executor ex, SendLine send, std::size_t max_outstanding)
    : ex_(std::move(ex)), send_(std::move(send)), max_outstanding_(max_outstanding) {}

namespace {

RpcError error_from(const json::value& v) {
  RpcError e{kInternalError, "Malformed error", nullptr};
  if (!v.is_object()) return e;
  const auto& o = v.as_object();
  if (auto* c = o.if_contains("code"); c && c->is_int64()) e.code = static_cast<int>(c->as_int64());
  if (auto* m = o.if_contains("message"); m && m->is_string()) e.message = std::string(m->as_string());
  if (auto* d = o.if_contains("data")) e.data = *d;
  return e;
}

}  // namespace

void Connection::receive(std::string_view line) {
  // After close nothing more is dispatched: the handlers' owners may be gone.
  if (closed_ || line.find_first_not_of(" \t\r") == std::string_view::npos) return;
  auto parsed = jsonio::read_object(line);
  if (!parsed) {
    if (on_protocol_error_)
      on_protocol_error_("not JSON-RPC (" + parsed.error().message + "): " + std::string(line.substr(0, 200)));
    return;
  }
  auto& o = *parsed;
  const json::value* id = o.if_contains("id");
  const json::value* method = o.if_contains("method");
  if (method && method->is_string()) {
    json::value params = o.contains("params") ? o.at("params") : json::value(nullptr);
    if (id && !id->is_null()) {
      asio::co_spawn(ex_, serve(*id, std::string(method->as_string()), std::move(params)), asio::detached);
    } else if (on_notification_) {
      on_notification_(std::string(method->as_string()), std::move(params));
    }
    return;
  }
  // A reply: an id, and a result or an error. (An error with a null id answers a message the peer
  // could not read at all; that is reported and ignored like any line that isn't JSON-RPC.)
  const bool reply_shaped = id && !id->is_null() && (o.contains("result") || o.contains("error"));
  if (reply_shaped && !id->is_int64()) {
    broken("a reply whose id is not one of ours: " + json::serialize(*id).substr(0, 100));
    return;
  }
  if (id && id->is_int64()) {
    auto it = pending_.find(id->as_int64());
    if (it == pending_.end()) {
      broken("a reply to a call it was never sent, or already answered (id " + std::to_string(id->as_int64()) + ")");
      return;
    }
    auto p = it->second;
    pending_.erase(it);
    if (auto* err = o.if_contains("error"))
      p->result = Result(error_from(*err));
    else
      p->result = Result(o.contains("result") ? o.at("result") : json::value(nullptr));
    p->done.cancel();
    return;
  }
  if (on_protocol_error_) on_protocol_error_("neither a call nor a reply: " + std::string(line.substr(0, 200)));
}

asio::awaitable<void> Connection::serve(json::value id, std::string method, json::value params) {
  auto self = shared_from_this();
  Result r = RpcError{kMethodNotFound, "Method not found: " + method, nullptr};
  if (on_request_) {
    try {
      r = co_await on_request_(method, std::move(params));
    } catch (const std::exception& e) {
      r = RpcError{kInternalError, e.what(), nullptr};
    }
  }
  reply(id, r);
}

void Connection::reply(const json::value& id, const Result& r) {
  if (closed_) return;
  json::object o;
  o["jsonrpc"] = "2.0";
  o["id"] = id;
  if (r) {
    o["result"] = *r;
  } else {
    json::object e{{"code", r.error().code}, {"message", r.error().message}};
    if (!r.error().data.is_null()) e["data"] = r.error().data;
    o["error"] = std::move(e);
  }
  send_(json::serialize(o));
}

asio::awaitable<Result> Connection::call(std::string method, json::value params) {
  auto self = shared_from_this();
  if (closed_) co_return RpcError{kConnectionClosed, close_reason_, nullptr};
  if (pending_.size() >= max_outstanding_)
    co_return RpcError{kInternalError, "Too many calls waiting for the peer", nullptr};
  const std::int64_t id = next_id_++;
  auto p = std::make_shared<Pending>(ex_);
  pending_[id] = p;
  json::object o{{"jsonrpc", "2.0"}, {"id", id}, {"method", method}};
  if (!params.is_null()) o["params"] = std::move(params);
  if (!send_(json::serialize(o))) {
    pending_.erase(id);
    co_return RpcError{kConnectionClosed, "The peer's input is closed", nullptr};
  }
  co_await p->done.async_wait(asio::as_tuple(asio::use_awaitable));
  if (!p->result) co_return RpcError{kConnectionClosed, close_reason_, nullptr};
  co_return std::move(*p->result);
}

void Connection::notify(std::string method, json::value params) {
  if (closed_) return;
  json::object o{{"jsonrpc", "2.0"}, {"method", method}};
  if (!params.is_null()) o["params"] = std::move(params);
  send_(json::serialize(o));
}

void Connection::broken(std::string what) {
  if (on_broken_)
    on_broken_(std::move(what));
  else if (on_protocol_error_)
    on_protocol_error_(std::move(what));
}

void Connection::close(std::string reason) {
  if (closed_) return;
  closed_ = true;
  close_reason_ = std::move(reason);
  auto pending = std::move(pending_);
  pending_.clear();
  for (auto& [id, p] : pending) {
    p->result = Result(RpcError{kConnectionClosed, close_reason_, nullptr});
    p->done.cancel();
  }
}

}  // namespace leuria::rpc
