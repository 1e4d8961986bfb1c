// The page's end of a session's tool channel over a WebSocket: the engine's messages go out at
// once while nothing is being written, else through a bounded queue with one write in flight (a
// page that stops reading while kMaxQueuedMessages messages, or kMaxQueuedBytes, wait is
// disconnected: acks echo what the page sent, so a count alone would let a page make the engine
// hold a thousand copies of its largest message); pings every ping interval; the page's messages
// are applied to the session's PageTools, a declaration only up to kMaxDeclarationBytes (the
// session keeps it for its life).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "core/session.hpp"
#include "core/timer_grid.hpp"
#include "http/message.hpp"

namespace leuria::web {

inline constexpr std::size_t kMaxQueuedMessages = 1024;
inline constexpr std::size_t kMaxQueuedBytes = 8 * 1024 * 1024;
inline constexpr std::size_t kMaxDeclarationBytes = 64 * 1024;

class PageSocketLink final : public core::PageLink, public std::enable_shared_from_this<PageSocketLink> {
 public:
  PageSocketLink(boost::asio::any_io_executor ex, std::chrono::milliseconds ping_every)
      : ex_(ex), ping_every_(ping_every), wake_(ex), ping_timer_(ex), writer_done_(ex) {}

  void send_call(const core::PageCall& call) override;
  void close() override;
  std::optional<std::string> refuse_arguments(std::string_view arguments_json) const override;

  // Serves the socket until either side closes it.
  boost::asio::awaitable<void> run(http::WebSocket& ws, std::shared_ptr<core::Session> session);

 private:
  void enqueue(std::string text);
  boost::asio::awaitable<void> write_loop(http::WebSocket& ws);
  void arm_ping();
  void handle(const std::string& text, core::Session& session);

  boost::asio::any_io_executor ex_;
  std::chrono::milliseconds ping_every_;
  std::deque<std::string> out_;
  std::size_t out_bytes_ = 0;
  bool closing_ = false;
  http::WebSocket* parked_ = nullptr;  // the writer's socket while it waits on wake_: enqueue may write to it
  bool flush_ = false;                     // a message enqueue wrote is half-sent: the writer sends the rest first
  boost::asio::steady_timer wake_;  // the writer waits here for a message
  core::GridTimer ping_timer_;  // on the grid: the pings of idle channels due together go together
  boost::asio::steady_timer writer_done_;  // run() waits here for the writer, unless writer_finished_
  bool writer_finished_ = false;
};

}  // namespace leuria::web
