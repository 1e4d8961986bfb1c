#include "adapters/web/webmcp_channel.hpp"

#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <spdlog/spdlog.h>

#include "adapters/web/webmcp_codec.hpp"
#include "core/clock.hpp"

namespace leuria::web {

namespace asio = boost::asio;

void PageSocketLink::enqueue(std::string text) {
  if (closing_) return;
  // The writer is parked and the socket free: the message goes now, without waking the writer (a
  // pong is written as its ping is read: no trip through the scheduler for the wake, none for the
  // write's completion). What the socket did not take, the writer sends first when it wakes.
  if (parked_ && out_.empty() && !flush_ && parked_->ready_now()) {
    if (!parked_->write_now(std::move(text))) {
      flush_ = true;
      wake_.cancel();
    }
    return;
  }
  // One message may always wait, however large: a call's arguments come from the AI.
  if (out_.size() >= kMaxQueuedMessages || (!out_.empty() && out_bytes_ + text.size() > kMaxQueuedBytes)) {
    spdlog::info("event=webmcp.overflow messages={} bytes={} note=\"the page stopped reading; channel closed\"",
                 out_.size(), out_bytes_);
    close();
    return;
  }
  out_bytes_ += text.size();
  out_.push_back(std::move(text));
  wake_.cancel();
}

void PageSocketLink::send_call(const core::PageCall& call) { enqueue(encode_call(call)); }

std::optional<std::string> PageSocketLink::refuse_arguments(std::string_view arguments_json) const {
  return arguments_refusal(arguments_json);
}

void PageSocketLink::close() {
  closing_ = true;
  wake_.cancel();
  ping_timer_.disarm();
}

// The ping has a timer of its own, on the grid of core::coalesced, armed once a period: when the
// writer's wait for its next message was the ping's timer, every message cancelled it and armed it
// again, and arming the earliest timer is a timerfd_settime system call (bench scenario 6: one per
// message). A GridTimer's pending call is dropped with it: the call needs no hold on the link.
void PageSocketLink::arm_ping() {
  if (closing_) return;  // closed before the writer began (the session had ended): nothing to ping
  ping_timer_.arm(core::coalesced(std::chrono::steady_clock::now() + ping_every_, ping_every_), [this] {
    if (closing_) return;
    enqueue(encode_ping());
    if (!closing_) arm_ping();  // enqueue closes a channel whose page stopped reading
  });
}

asio::awaitable<void> PageSocketLink::write_loop(http::WebSocket& ws) {
  arm_ping();
  while (!closing_) {
    if (flush_) {
      flush_ = false;
      const bool flushed = co_await ws.flush();
      if (!flushed) close();
      continue;
    }
    if (out_.empty()) {
      // Woken by enqueue or close (a cancel); a timer at the end of time never becomes the earliest.
      wake_.expires_at(asio::steady_timer::time_point::max());
      parked_ = &ws;
      struct Unpark {  // also if the frame is destroyed while it waits (the io_context's end)
        http::WebSocket*& parked;
        ~Unpark() { parked = nullptr; }
      } unpark{parked_};
      co_await wake_.async_wait(asio::as_tuple(asio::use_awaitable));
      continue;
    }
    std::string text = std::move(out_.front());
    out_.pop_front();
    out_bytes_ -= text.size();
    if (!co_await ws.write(std::move(text))) close();
  }
  co_await ws.close();  // also ends the reader
}

void PageSocketLink::handle(const std::string& text, core::Session& session) {
  core::PageTools& tools = session.page_tools();
  PageMessage message = parse_page_message(text);
  const bool declaration = std::holds_alternative<RegisterTool>(message) ||
                           std::holds_alternative<RegisterResource>(message) ||
                           std::holds_alternative<RegisterPrompt>(message);
  if (declaration && core::is_final(session.status())) {  // read just before the channel closed
    enqueue(encode_error("The session has ended"));
    return;
  }
  if (declaration && text.size() > kMaxDeclarationBytes) {
    enqueue(encode_error("Declaration too large: at most " + std::to_string(kMaxDeclarationBytes / 1024) + " KB"));
    return;
  }
  std::visit(
      [&](auto& m) {
        using T = std::decay_t<decltype(m)>;
        if constexpr (std::is_same_v<T, RegisterTool>) {
          const std::string name = m.spec.name;
          if (tools.add_tool(std::move(m.spec), std::move(m.annotations_json)))
            enqueue(encode_ack("registerTool", name));
          else
            enqueue(encode_error(core::valid_tool_name(name) ? std::string("Too many tools")
                                                             : "Invalid tool name: use 1 to " +
                                                                   std::to_string(core::kMaxToolNameLength) +
                                                                   " characters of A-Z a-z 0-9 _ -"));
        } else if constexpr (std::is_same_v<T, DeregisterTool>) {
          tools.remove_tool(m.name);
        } else if constexpr (std::is_same_v<T, RegisterResource>) {
          const std::string uri = m.spec.uri;
          if (tools.add_resource(std::move(m.spec))) enqueue(encode_ack("registerResource", uri));
          else enqueue(encode_error("Too many resources"));
        } else if constexpr (std::is_same_v<T, RegisterPrompt>) {
          const std::string name = m.spec.name;
          if (tools.add_prompt(std::move(m.spec))) enqueue(encode_ack("registerPrompt", name));
          else enqueue(encode_error("Too many prompts"));
        } else if constexpr (std::is_same_v<T, PageResponse>) {
          tools.answer(m.id, std::move(m.answer));
        } else if constexpr (std::is_same_v<T, Ping>) {
          enqueue(encode_pong());
        } else if constexpr (std::is_same_v<T, Pong>) {
          // alive
        } else {
          enqueue(encode_error(m.message));
        }
      },
      message);
}

asio::awaitable<void> PageSocketLink::run(http::WebSocket& ws, std::shared_ptr<core::Session> session) {
  auto self = shared_from_this();
  session->page_tools().attach(self);
  writer_done_.expires_at(asio::steady_timer::time_point::max());
  // The flag, not only the cancel: a cancel with nobody waiting yet is lost, and the writer may well
  // finish first (a write that fails at once closes the socket, which ends the read), leaving the wait
  // below at the end of time, holding the link, the socket and the session.
  writer_finished_ = false;
  asio::co_spawn(ex_, write_loop(ws), [self](std::exception_ptr) {
    self->writer_finished_ = true;
    self->writer_done_.cancel();
  });
  while (!closing_) {
    auto text = co_await ws.read();
    if (!text) break;
    if (!closing_) handle(*text, *session);
  }
  session->page_tools().detach(this);
  session->page_left();  // the channel went: the session may now be unused
  close();
  // The writer uses the socket: it must be done before the socket goes away.
  while (!writer_finished_) co_await writer_done_.async_wait(asio::as_tuple(asio::use_awaitable));
}

}  // namespace leuria::web
