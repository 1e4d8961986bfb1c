#include "http/read_deadline.hpp"

#include "core/clock.hpp"

namespace leuria::http {

// The timer and its handler's way back to the owner, which ~ReadDeadline cuts.
struct ReadDeadline::State {
  explicit State(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
  boost::asio::steady_timer timer;
  ReadDeadline* owner = nullptr;
  std::function<void()> on_expiry;
};

ReadDeadline::Clock::time_point ReadDeadline::due() const {
  if (coalesce_ <= Clock::duration::zero() || at_ == Clock::time_point::max()) return at_;
  return core::coalesced(at_, coalesce_);
}

void ReadDeadline::arm() {
  armed_ = true;
  armed_for_ = due();
  state_->timer.expires_at(armed_for_);
  state_->timer.async_wait([s = state_](boost::system::error_code) {
    if (s->owner) s->owner->on_timer();  // else gone: nothing to end
  });
}

void ReadDeadline::on_timer() {
  armed_ = false;
  if (at_ == Clock::time_point::max()) return;  // cleared: wait for a set()
  if (Clock::now() >= at_) {
    at_ = Clock::time_point::max();
    auto s = state_;  // on_expiry may end the owner's coroutine, and with it the owner
    s->on_expiry();
    return;
  }
  arm();  // the deadline moved later, or earlier (set() cancelled the wait)
}

ReadDeadline::ReadDeadline(boost::asio::any_io_executor ex, std::function<void()> on_expiry, Clock::duration coalesce)
    : coalesce_(coalesce), state_(std::make_shared<State>(std::move(ex))) {
  state_->owner = this;
  state_->on_expiry = std::move(on_expiry);
}

ReadDeadline::~ReadDeadline() {
  state_->owner = nullptr;
  state_->on_expiry = nullptr;
  if (armed_) state_->timer.cancel();
}

void ReadDeadline::set(Clock::duration from_now) {
  at_ = Clock::now() + from_now;
  if (!armed_)
    arm();
  else if (due() < armed_for_)
    state_->timer.cancel();  // its handler re-arms at the earlier time
}

void ReadDeadline::clear() { at_ = Clock::time_point::max(); }

void ReadDeadline::stop() {
  at_ = Clock::time_point::max();
  if (armed_) state_->timer.cancel();
}

}  // namespace leuria::http
