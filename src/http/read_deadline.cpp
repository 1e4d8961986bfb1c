#include "http/read_deadline.hpp"

#include "core/clock.hpp"

namespace leuria::http {

ReadDeadline::Clock::time_point ReadDeadline::due() const {
  if (coalesce_ <= Clock::duration::zero() || at_ == Clock::time_point::max()) return at_;
  return core::coalesced(at_, coalesce_);
}

void ReadDeadline::arm() {
  timer_.arm(due(), [this] { on_timer(); });
}

void ReadDeadline::on_timer() {
  if (at_ == Clock::time_point::max()) return;  // cleared: wait for a set()
  if (Clock::now() >= at_) {
    at_ = Clock::time_point::max();
    // A copy: on_expiry closes the connection, which may end the owner's coroutine, and with it this.
    auto on_expiry = on_expiry_;
    on_expiry();
    return;
  }
  arm();  // the deadline moved later
}

ReadDeadline::ReadDeadline(boost::asio::any_io_executor ex, std::function<void()> on_expiry, Clock::duration coalesce)
    : coalesce_(coalesce), on_expiry_(std::move(on_expiry)), timer_(ex) {}

ReadDeadline::~ReadDeadline() = default;

void ReadDeadline::set(Clock::duration from_now) {
  at_ = Clock::now() + from_now;
  if (!timer_.armed() || due() < timer_.expiry()) arm();
}

void ReadDeadline::clear() { at_ = Clock::time_point::max(); }

void ReadDeadline::stop() {
  at_ = Clock::time_point::max();
  timer_.disarm();
}

}  // namespace leuria::http
