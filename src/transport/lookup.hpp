// Bytes: a host name's addresses (getaddrinfo), looked up off the io thread.
//
// Asio's resolver runs getaddrinfo on a private thread and posts its answer to the io_context from
// there, which is why the io_context had to lock its scheduler around every operation (about 500
// instructions of a tool channel's ping of 13,500, callgrind). Here the lookup runs on a thread of its
// own and answers through an eventfd that the io thread waits on like any descriptor: no thread but
// the io thread touches the io_context, and it runs without locks (app/engine.cpp).
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <string>

namespace leuria::transport {

// At most this many lookups at once (each holds a thread while the system resolver answers); one more
// fails at once with a sentence.
inline constexpr int kMaxLookups = 16;

class Lookup {
 public:
  // getaddrinfo's signature: tests give a slow one.
  using Resolve = int (*)(const char*, const char*, const struct addrinfo*, struct addrinfo**);
  explicit Lookup(boost::asio::any_io_executor ex, Resolve resolve = nullptr);
  ~Lookup();
  Lookup(const Lookup&) = delete;
  Lookup& operator=(const Lookup&) = delete;

  // The addresses of host:port, or why there are none ("Host not found", "Stopped" after cancel(), or
  // "No answer within N s" past `deadline`: a resolver that doesn't answer (a DNS server gone, an mDNS
  // name) would otherwise hold a session's start until the system gives up, which may be minutes).
  boost::asio::awaitable<boost::system::result<boost::asio::ip::tcp::resolver::results_type, std::string>> run(
      std::string host, std::string port, std::chrono::milliseconds deadline = std::chrono::seconds(10));
  // Ends a run() under way with "Stopped". Its thread finishes the lookup on its own and drops it.
  void cancel();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace leuria::transport
