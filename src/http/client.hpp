// Messages: an HTTP/1.1 client for model servers (http:// on loopback, https:// for remote ones,
// verified against the system's CAs). The response body of a 2xx answer is handed over piece by
// piece as it arrives (streamed completions); other answers are collected (up to 64 KB).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "http/message.hpp"

namespace leuria::http {

struct ClientRequest {
  std::string method = "GET";
  std::string url;
  std::vector<Header> headers;
  std::string body;
  std::chrono::seconds connect_timeout{10};
  std::chrono::seconds read_timeout{300};  // between two pieces of the answer
  // Awaited before each read of a streamed (on_data) body: the caller's backpressure. The read
  // timeout counts from when it returns, so a pause of ours is not the server's silence.
  std::function<boost::asio::awaitable<void>()> before_read;
};

struct ClientResult {
  unsigned status = 0;  // 0 when no answer came (error says why)
  std::string error;    // a plain sentence when status is 0 or the stream broke
  std::string body;     // non-2xx answers, or 2xx answers read without on_data
  bool complete = false;  // the whole body was received
};

// Lets another coroutine stop a request: the socket is closed and fetch returns.
class Abort {
 public:
  void abort();
  bool aborted() const { return aborted_; }
  // Registers how to stop the request; if it was already aborted, stops it at once.
  void on_abort(std::function<void()> f) {
    closer_ = std::move(f);
    if (aborted_ && closer_) closer_();
  }

 private:
  bool aborted_ = false;
  std::function<void()> closer_;
};

// on_data: body pieces of a 2xx answer; return false to stop reading.
boost::asio::awaitable<ClientResult> fetch(boost::asio::any_io_executor ex, ClientRequest req,
                                           std::function<bool(std::string_view)> on_data = {},
                                           std::shared_ptr<Abort> abort = {});

}  // namespace leuria::http
