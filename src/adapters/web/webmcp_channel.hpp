// The page's end of a session's tool channel over a WebSocket: the engine's messages go out
// through a bounded queue with one write in flight (a page that stops reading for
// kMaxQueuedMessages messages is disconnected); pings every ping interval; the page's messages
// are applied to the session's PageTools.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>

#include "core/session.hpp"
#include "http/message.hpp"

namespace leuria::web {

inline constexpr std::size_t kMaxQueuedMessages = 1024;

class PageSocketLink final : public core::PageLink, public std::enable_shared_from_this<PageSocketLink> {
 public:
  PageSocketLink(boost::asio::any_io_executor ex, std::chrono::milliseconds ping_every)
      : ex_(ex), ping_every_(ping_every), wake_(ex), writer_done_(ex) {}

  void send_call(const core::PageCall& call) override;
  void close() override;

  // Serves the socket until either side closes it.
  boost::asio::awaitable<void> run(http::WebSocket& ws, std::shared_ptr<core::Session> session);

 private:
  void enqueue(std::string text);
  boost::asio::awaitable<void> write_loop(http::WebSocket& ws);
  void handle(const std::string& text, core::Session& session);

  boost::asio::any_io_executor ex_;
  std::chrono::milliseconds ping_every_;
  std::deque<std::string> out_;
  bool closing_ = false;
  boost::asio::steady_timer wake_;
  boost::asio::steady_timer writer_done_;
};

}  // namespace leuria::web
