#include "core/timer_grid.hpp"

#include <boost/asio/execution/context.hpp>
#include <boost/asio/query.hpp>
#include <utility>
#include <vector>

namespace leuria::core {

namespace asio = boost::asio;
using grid_detail::Link;

namespace {

void insert_before(Link& at, Link& n) {  // at the tail of at's list, when `at` is its sentinel
  n.prev = at.prev;
  n.next = &at;
  at.prev->next = &n;
  at.prev = &n;
}

void insert_after(Link& at, Link& n) {  // at the head of at's list, when `at` is its sentinel
  n.next = at.next;
  n.prev = &at;
  at.next->prev = &n;
  at.next = &n;
}

// Unlinks n; answers its list's sentinel if the list is now empty (only the sentinel is left).
Link* remove(Link& n) {
  Link* p = n.prev;
  Link* q = n.next;
  p->next = q;
  q->prev = p;
  n.prev = n.next = nullptr;
  return p == q ? p : nullptr;
}

// Moves the list of sentinel `from` whole into the empty sentinel `to`.
void take_all(Link& from, Link& to) {
  if (from.next == &from) {
    to.prev = to.next = &to;
    return;
  }
  to.next = from.next;
  to.prev = from.prev;
  to.next->prev = &to;
  to.prev->next = &to;
  from.prev = from.next = &from;
}

}  // namespace

asio::execution_context::id TimerGrid::id;

TimerGrid::TimerGrid(asio::execution_context& ctx) : asio::execution_context::service(ctx) {}

TimerGrid::~TimerGrid() = default;

// The io_context is going away: its handlers will never run. The timers still armed are let go
// (their calls dropped uncalled), so a timer destroyed later, with the coroutine frame it lives in,
// finds itself in no list and leaves the grid alone.
void TimerGrid::shutdown() {
  shut_down_ = true;  // first: a call destroyed below may own a timer, which must find no grid to use
  std::vector<std::function<void()>> calls;
  for (auto& [at, sentinel] : slots_) {
    while (sentinel.next != &sentinel) {
      auto* t = static_cast<GridTimer*>(sentinel.next);
      remove(*t);
      calls.push_back(std::exchange(t->fn_, nullptr));
    }
  }
  slots_.clear();
  wakeup_.reset();  // while the timer service it uses still exists
  wakeup_at_ = Clock::time_point::max();
  // `calls` goes last, when the lists it might touch through a timer's destructor are all empty.
}

TimerGrid::Slots::iterator TimerGrid::slot(Clock::time_point at) {
  auto [it, fresh] = slots_.try_emplace(at);
  if (fresh) it->second.prev = it->second.next = &it->second;  // an empty list: its sentinel alone
  return it;
}

void TimerGrid::wake_for_earliest() { wake_at(slots_.empty() ? Clock::time_point::max() : slots_.begin()->first); }

void TimerGrid::link(GridTimer& t) {
  insert_before(slot(t.at_)->second, t);
  if (!firing_ && t.at_ < wakeup_at_) wake_at(t.at_);
}

void TimerGrid::unlink(GridTimer& t) {
  Link* emptied = remove(t);
  if (!emptied) return;
  // The list is now empty. Its slot goes, unless the list was on_wakeup's own (taken off the map).
  auto it = slots_.find(t.at_);
  if (it == slots_.end() || &it->second != emptied) return;
  const bool earliest = it == slots_.begin();
  slots_.erase(it);
  // Not woken for nothing: a connection that starts streaming stops its deadline, and each such
  // wakeup is one the engine need not take.
  if (earliest && !firing_) wake_for_earliest();
}

void TimerGrid::wake_at(Clock::time_point at) {
  wakeup_at_ = at;
  if (!wakeup_) return;  // shut down
  if (at == Clock::time_point::max()) {
    wakeup_->cancel();
    return;
  }
  wakeup_->expires_at(at);  // a wait still pending ends aborted
  wakeup_->async_wait([this](boost::system::error_code ec) {
    if (!ec) on_wakeup();
  });
}

void TimerGrid::on_wakeup() {
  ++wakeups_;
  firing_ = true;
  // The due slots in time order, each taken off the map whole; then its timers one at a time, each
  // unlinked before its call, so that a call may arm, disarm or destroy any timer, those still
  // waiting in `due` included (their unlink finds `due`, which is no slot's).
  const auto now = Clock::now();
  while (!slots_.empty() && slots_.begin()->first <= now) {
    const auto at = slots_.begin()->first;
    Link due;
    take_all(slots_.begin()->second, due);
    slots_.erase(slots_.begin());
    while (due.next != &due) {
      auto* t = static_cast<GridTimer*>(due.next);
      remove(*t);
      auto fn = std::exchange(t->fn_, nullptr);
      try {
        fn();
      } catch (...) {  // a broken promise, but the rest of the slot is not lost with it
        put_back(due, at);
        firing_ = false;
        wake_for_earliest();
        throw;
      }
    }
  }
  firing_ = false;
  wake_for_earliest();  // this wait is over
}

void TimerGrid::put_back(Link& due, Clock::time_point at) {
  auto it = slot(at);
  while (due.prev != &due) {  // ahead of any armed for `at` meanwhile: they were armed later
    Link* t = due.prev;
    remove(*t);
    insert_after(it->second, *t);
  }
  if (it->second.next == &it->second) slots_.erase(it);
}

GridTimer::GridTimer(const asio::any_io_executor& ex)
    : grid_(asio::use_service<TimerGrid>(asio::query(ex, asio::execution::context))) {
  if (!grid_.wakeup_ && !grid_.shut_down_) grid_.wakeup_.emplace(ex);
}

GridTimer::~GridTimer() { disarm(); }

void GridTimer::arm(Clock::time_point at, std::function<void()> fn) {
  if (armed()) grid_.unlink(*this);
  if (grid_.shut_down_) return;  // would never run
  at_ = at;
  auto replaced = std::exchange(fn_, std::move(fn));  // destroyed once this timer is consistent
  grid_.link(*this);
}

void GridTimer::disarm() {
  if (!armed()) return;
  grid_.unlink(*this);
  auto dropped = std::exchange(fn_, nullptr);  // not destroyed inside fn_'s own assignment
}

}  // namespace leuria::core
