#include "core/pairing.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/clock.hpp"
#include "core/random.hpp"

namespace leuria::core {

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

struct PairingBook::Request {
  explicit Request(asio::any_io_executor ex) : expiry(ex) {}
  std::string id;
  std::string origin;
  std::string nonce;
  std::vector<std::string> retired;  // earlier nonces of this question: their claims get 404
  std::optional<std::string> app;
  Needs needs;
  std::string created_at;
  PairingView::State state = PairingView::State::pending;
  std::string token;  // with allowed: on disk as a hash already, handed to the page once
  bool gone = false;  // forgotten: answered, replaced or expired long ago
  bool expiry_seen = false;  // a claim has been told it expired
  asio::steady_timer expiry;
  std::vector<asio::steady_timer*> waiters;  // claims long-polling on this request
};

namespace {

// Cuts to at most `max` Unicode code points without splitting a UTF-8 sequence.
std::string cut_chars(const std::string& s, std::size_t max) {
  std::size_t chars = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) {
      if (chars == max) return s.substr(0, i);
      ++chars;
    }
  }
  return s;
}

std::optional<std::string> clean_app(std::optional<std::string> app) {
  if (!app || app->empty()) return std::nullopt;
  return cut_chars(*app, kMaxAppNameChars);
}

// Older nonces remembered per question, so an old claim loop can't take the question back.
constexpr std::size_t kRetiredNonces = 32;

// Nonces whose answer was collected, remembered so a replay can't ask again.
constexpr std::size_t kMaxSpentNonces = 1024;

// The shortest time an expired question stays readable as expired.
constexpr std::chrono::milliseconds kTombstoneFloor{60'000};

}  // namespace

PairingBook::PairingBook(asio::any_io_executor ex, GrantBook& grants, PairingMode mode, PairingTimings timings,
                         PairingObserver& observer)
    : ex_(std::move(ex)), grants_(grants), mode_(mode), timings_(timings), observer_(observer) {}

PairingBook::~PairingBook() {
  for (auto& [id, r] : requests_) {
    r->gone = true;
    r->expiry.cancel();
  }
}

PairingView PairingBook::view(const Request& r) {
  return PairingView{r.id, r.origin, r.app, r.needs, r.created_at, r.state};
}

PairingBook::RequestPtr PairingBook::by_origin(const std::string& origin) const {
  for (auto& [id, r] : requests_)
    if (r->origin == origin) return r;
  return nullptr;
}

std::size_t PairingBook::pending_count() const {
  return static_cast<std::size_t>(std::count_if(requests_.begin(), requests_.end(), [](auto& kv) {
    return kv.second->state == PairingView::State::pending;
  }));
}

bool PairingBook::cooling_down(const std::string& origin) {
  auto now = Clock::now();
  std::erase_if(refused_until_, [&](auto& kv) { return kv.second <= now; });
  return refused_until_.contains(origin);
}

void PairingBook::spend(const std::string& origin, const std::string& nonce) {
  // Bounded: answers are collected at most max_pending per decision round, and entries expire.
  const auto now = Clock::now();
  std::erase_if(spent_, [&](auto& kv) { return kv.second <= now; });
  if (spent_.size() >= kMaxSpentNonces) spent_.erase(spent_.begin());
  spent_[origin + " " + nonce] = now + std::max<std::chrono::milliseconds>(timings_.expiry, kTombstoneFloor);
}

bool PairingBook::spent(const std::string& origin, const std::string& nonce) const {
  auto it = spent_.find(origin + " " + nonce);
  return it != spent_.end() && it->second > Clock::now();
}

bool PairingBook::has_open_request(const std::string& origin) const {
  auto r = by_origin(origin);
  return r && !(r->state == PairingView::State::expired && r->expiry_seen);
}

std::optional<PairingView> PairingBook::find(const std::string& id) const {
  auto it = requests_.find(id);
  if (it == requests_.end()) return std::nullopt;
  return view(*it->second);
}

std::vector<PairingView> PairingBook::pending() const {
  std::vector<PairingView> out;
  for (auto& [id, r] : requests_)
    if (r->state == PairingView::State::pending) out.push_back(view(*r));
  std::sort(out.begin(), out.end(), [](auto& a, auto& b) { return a.created_at < b.created_at; });
  return out;
}

void PairingBook::renew(const RequestPtr& r, const std::string& nonce, std::optional<std::string> app,
                        const Needs& needs) {
  r->retired.push_back(std::move(r->nonce));
  if (r->retired.size() > kRetiredNonces) r->retired.erase(r->retired.begin());
  r->nonce = nonce;
  if (auto a = clean_app(std::move(app))) r->app = a;
  if (!needs.empty()) r->needs = needs;  // a retry that leaves them out keeps them
  wake(r);  // claims waiting with the older nonce now answer 404
}

void PairingBook::wake(const RequestPtr& r) {
  for (auto* t : r->waiters) t->cancel();
}

void PairingBook::forget(const RequestPtr& r) {
  if (r->gone) return;
  r->gone = true;
  requests_.erase(r->id);
  r->expiry.cancel();
  wake(r);
}

void PairingBook::expire(const RequestPtr& r) {
  if (r->gone) return;
  if (r->state != PairingView::State::pending) {
    // An answer nobody collected, or an expired question kept so late claims learn it expired.
    forget(r);
    return;
  }
  r->state = PairingView::State::expired;
  observer_.on_decided(view(*r), Decision::expired);
  wake(r);
  // Kept a while as a tombstone so late claims and decisions learn 410, not 404. Bounded: at most
  // max_pending questions expire per expiry period.
  r->expiry.expires_after(std::max<std::chrono::milliseconds>(timings_.expiry, kTombstoneFloor));
  r->expiry.async_wait([this, weak = std::weak_ptr<Request>(r)](boost::system::error_code ec) {
    if (auto p = weak.lock(); p && !ec) expire(p);
  });
}

boost::system::result<PairingBook::RequestPtr, PairingError> PairingBook::create(
    const std::string& origin, std::string nonce, std::optional<std::string> app, Needs needs) {
  if (cooling_down(origin)) return PairingError::cooling_down;
  if (pending_count() >= timings_.max_pending) return PairingError::too_many;
  auto r = std::make_shared<Request>(ex_);
  r->id = random_base64url(kRequestIdBytes);
  r->origin = origin;
  r->nonce = std::move(nonce);
  r->app = clean_app(std::move(app));
  r->needs = needs;
  r->created_at = now_iso8601();
  r->expiry.expires_after(timings_.expiry);
  r->expiry.async_wait([this, weak = std::weak_ptr<Request>(r)](boost::system::error_code ec) {
    if (auto p = weak.lock(); p && !ec) expire(p);
  });
  requests_[r->id] = r;
  observer_.on_request(view(*r));
  return r;
}

asio::awaitable<boost::system::result<ClaimAnswer, PairingError>> PairingBook::claim(
    std::string origin, std::optional<std::string> nonce, std::optional<std::string> app, Needs needs,
    std::function<bool()> caller_gone) {
  if (!nonce) co_return PairingError::nonce_missing;
  if (!valid_nonce(*nonce)) co_return PairingError::nonce_invalid;

  RequestPtr r = by_origin(origin);
  if (!r || r->nonce != *nonce) {
    // After a No, every attempt is refused for the cooldown; a replayed or replaced nonce never asks
    // again; a fresh nonce updates a question still pending (CLI), and nothing else.
    if (cooling_down(origin)) co_return PairingError::cooling_down;
    if (spent(origin, *nonce)) co_return PairingError::unknown;
    if (r) {
      const bool retired = std::find(r->retired.begin(), r->retired.end(), *nonce) != r->retired.end();
      if (retired || mode_ == PairingMode::link_asks) co_return PairingError::unknown;
      if (r->state == PairingView::State::expired) {
        forget(r);
        r = nullptr;
      } else if (r->state == PairingView::State::pending) {
        renew(r, *nonce, app, needs);  // the page tried again: the same question, not a second one
      } else {
        co_return PairingError::unknown;  // answered; only the latest nonce collects it
      }
    }
  }
  if (!r) {
    if (mode_ == PairingMode::link_asks) co_return PairingError::unknown;
    auto created = create(origin, *nonce, std::move(app), needs);
    if (!created) co_return created.error();
    r = *created;
  }

  const auto deadline = Clock::now() + timings_.claim_wait;
  for (;;) {
    if (r->gone || r->nonce != *nonce) co_return PairingError::unknown;
    switch (r->state) {
      case PairingView::State::allowed: {
        ClaimAnswer answer{ClaimAnswer::Status::allowed, std::move(r->token)};
        spend(r->origin, *nonce);
        forget(r);
        co_return answer;
      }
      case PairingView::State::denied:
        spend(r->origin, *nonce);
        forget(r);
        co_return ClaimAnswer{ClaimAnswer::Status::denied, {}};
      case PairingView::State::expired:
        // Kept until its tombstone timer ends, so decide and late claims also learn 410; but the
        // page has its answer now, so silence returns for the origin.
        r->expiry_seen = true;
        co_return PairingError::expired;
      case PairingView::State::pending:
        break;
    }
    if (Clock::now() >= deadline) co_return ClaimAnswer{ClaimAnswer::Status::pending, {}};

    asio::steady_timer timer(ex_, deadline);
    r->waiters.push_back(&timer);
    struct Unregister {
      Request& r;
      asio::steady_timer* t;
      ~Unregister() { std::erase(r.waiters, t); }
    } unregister{*r, &timer};
    co_await timer.async_wait(asio::as_tuple(asio::use_awaitable));
    // Woken by the answer (or the deadline): a caller that left meanwhile takes nothing; the answer
    // stays for a claim that is still there, or for the page's next one.
    if (caller_gone && caller_gone()) co_return PairingError::caller_gone;
  }
}

boost::system::result<std::string, PairingError> PairingBook::link(const std::string& origin,
                                                                   const std::optional<std::string>& nonce,
                                                                   std::optional<std::string> app, Needs needs) {
  if (!nonce) return PairingError::nonce_missing;
  if (!valid_nonce(*nonce)) return PairingError::nonce_invalid;
  if (RequestPtr r = by_origin(origin)) {
    if (r->state == PairingView::State::pending) {
      if (r->nonce != *nonce) renew(r, *nonce, std::move(app), needs);
      return r->id;
    }
    if (r->state == PairingView::State::denied && cooling_down(origin)) return PairingError::cooling_down;
    forget(r);  // an uncollected answer or an expired question: this link asks anew
  }
  auto created = create(origin, *nonce, std::move(app), needs);
  if (!created) return created.error();
  return (*created)->id;
}

boost::system::result<PairingView, PairingError> PairingBook::decide(const std::string& id, bool allow) {
  auto it = requests_.find(id);
  if (it == requests_.end()) return PairingError::unknown;
  RequestPtr r = it->second;
  if (r->state == PairingView::State::expired) return PairingError::expired;
  if (r->state != PairingView::State::pending) return PairingError::already_decided;
  if (allow) {
    auto token = grants_.issue(r->origin, r->app, r->needs);
    if (!token) return PairingError::not_saved;
    r->token = std::move(*token);
  }
  r->state = allow ? PairingView::State::allowed : PairingView::State::denied;
  if (!allow) refused_until_[r->origin] = Clock::now() + timings_.cooldown;
  observer_.on_decided(view(*r), allow ? Decision::allowed : Decision::denied);
  wake(r);
  return view(*r);
}

}  // namespace leuria::core
