#include "http/read_deadline.hpp"

#include "core/clock.hpp"

namespace leuria::http {

using Clock = std::chrono::steady_clock;

struct ReadDeadline::State {
  explicit State(boost::asio::any_io_executor ex) : timer(std::move(ex)) {}
  boost::asio::steady_timer timer;
  Clock::time_point at = Clock::time_point::max();  // max: none
  bool armed = false;  // a wait is pending on the timer
  bool done = false;   // the owner is gone
  Clock::duration coalesce{};
  std::function<void()> on_expiry;
  // When the timer is to fire for the deadline `at`.
  Clock::time_point due() const {
    if (coalesce <= Clock::duration::zero() || at == Clock::time_point::max()) return at;
    return core::coalesced(at, coalesce);
  }
};

void ReadDeadline::arm(const std::shared_ptr<State>& s) {
  s->armed = true;
  s->timer.expires_at(s->due());
  s->timer.async_wait([s](boost::system::error_code) {
    s->armed = false;
    if (s->done || s->at == Clock::time_point::max()) return;  // gone, or cleared: wait for a set()
    if (Clock::now() >= s->at) {
      s->at = Clock::time_point::max();
      s->on_expiry();
      return;
    }
    arm(s);  // the deadline moved later, or earlier (set() cancelled the wait)
  });
}

ReadDeadline::ReadDeadline(boost::asio::any_io_executor ex, std::function<void()> on_expiry, Clock::duration coalesce)
    : state_(std::make_shared<State>(std::move(ex))) {
  state_->on_expiry = std::move(on_expiry);
  state_->coalesce = coalesce;
}

ReadDeadline::~ReadDeadline() {
  state_->done = true;
  state_->on_expiry = nullptr;
  state_->timer.cancel();
}

void ReadDeadline::set(Clock::duration from_now) {
  state_->at = Clock::now() + from_now;
  if (!state_->armed)
    arm(state_);
  else if (state_->due() < state_->timer.expiry())
    state_->timer.cancel();  // its handler re-arms at the earlier time
}

void ReadDeadline::clear() { state_->at = Clock::time_point::max(); }

void ReadDeadline::stop() {
  state_->at = Clock::time_point::max();
  if (state_->armed) state_->timer.cancel();
}

}  // namespace leuria::http
