// Messages: a JSON-RPC 2.0 connection over newline-delimited framing (ACP's stdio transport).
// Both sides may call: outgoing calls live in a bounded table and each gets exactly one result
// (its reply, or an error when the connection closes); every incoming request gets exactly one
// reply, whatever its handler does (a thrown exception becomes -32603).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>

namespace leuria::rpc {

struct RpcError {
  int code = 0;
  std::string message;
  boost::json::value data;
};

inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kMethodNotFound = -32601;
inline constexpr int kInvalidParams = -32602;
inline constexpr int kInternalError = -32603;
inline constexpr int kConnectionClosed = -32000;  // ours: the peer went away before replying

using Result = boost::system::result<boost::json::value, RpcError>;

class Connection : public std::enable_shared_from_this<Connection> {
 public:
  using SendLine = std::function<bool(std::string line)>;
  using RequestHandler =
      std::function<boost::asio::awaitable<Result>(std::string method, boost::json::value params)>;
  using NotificationHandler = std::function<void(std::string method, boost::json::value params)>;
  using ProtocolErrorHandler = std::function<void(std::string what)>;

  // max_outstanding: calls awaiting a reply; one more fails at once with kInternalError.
  Connection(boost::asio::any_io_executor ex, SendLine send, std::size_t max_outstanding = 256);

  void on_request(RequestHandler h) { on_request_ = std::move(h); }
  void on_notification(NotificationHandler h) { on_notification_ = std::move(h); }
  // Lines that aren't JSON-RPC (agents sometimes print to stdout): reported, then ignored.
  void on_protocol_error(ProtocolErrorHandler h) { on_protocol_error_ = std::move(h); }
  // A reply that answers no call of ours (an id we never sent, one already answered, or an id of
  // another type): the peer has lost track of the conversation, and a call of ours may wait forever
  // for an answer it sent under the wrong id. The owner decides (an agent is stopped); without this
  // handler such a reply is a protocol error, reported and ignored.
  void on_broken(ProtocolErrorHandler h) { on_broken_ = std::move(h); }

  // Feed one received line.
  void receive(std::string_view line);

  boost::asio::awaitable<Result> call(std::string method, boost::json::value params);
  void notify(std::string method, boost::json::value params);

  // Fails every outstanding call with kConnectionClosed; later calls fail at once.
  void close(std::string reason);
  bool closed() const { return closed_; }

 private:
  struct Pending;
  void reply(const boost::json::value& id, const Result& r);
  boost::asio::awaitable<void> serve(boost::json::value id, std::string method, boost::json::value params);

  boost::asio::any_io_executor ex_;
  SendLine send_;
  std::size_t max_outstanding_;
  RequestHandler on_request_;
  NotificationHandler on_notification_;
  ProtocolErrorHandler on_protocol_error_;
  ProtocolErrorHandler on_broken_;
  void broken(std::string what);
  std::int64_t next_id_ = 1;
  std::map<std::int64_t, std::shared_ptr<Pending>> pending_;
  bool closed_ = false;
  std::string close_reason_;
};

}  // namespace leuria::rpc
