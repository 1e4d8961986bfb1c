// Pairing requests: the question "may this site use my AI?", from a link (desktop app) or a
// claim (CLI engine), until the page collects the answer. Owned by the io thread.
//
// Limits (protocol, Pairing): 20 pending across sites, 5-minute expiry, 30 s of refusals after a
// No, claims long-polled up to 25 s, the token returned once, a newer nonce replacing an older one.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/grants.hpp"
#include "core/needs.hpp"

namespace leuria::core {

struct PairingTimings {
  std::chrono::milliseconds claim_wait{25'000};
  std::chrono::milliseconds expiry{300'000};
  std::chrono::milliseconds cooldown{30'000};
  std::size_t max_pending = 20;
};

inline constexpr std::size_t kMaxAppNameChars = 80;

enum class PairingMode {
  claim_asks,  // CLI engine: a claim with nothing pending creates the question
  link_asks,   // desktop app: only a link (admin API) creates the question
};

enum class PairingError {
  nonce_missing,
  nonce_invalid,
  not_web_origin,
  cooling_down,  // the visitor said no less than `cooldown` ago (429)
  too_many,      // max_pending questions are open (429)
  unknown,       // no such request, or not with this nonce (404)
  caller_gone,   // the claim's caller closed its connection while it waited: nothing answered, nothing spent
  expired,       // expired before the visitor decided (410)
  already_decided,  // (410)
  not_saved,        // the visitor said yes, but the grant could not be written to disk (503)
};

enum class Decision { allowed, denied, expired };

struct PairingView {
  std::string id;
  std::string origin;
  std::optional<std::string> app;
  Needs needs;
  std::string created_at;
  enum class State { pending, allowed, denied, expired } state = State::pending;
};

struct ClaimAnswer {
  enum class Status { pending, denied, allowed } status = Status::pending;
  std::string token;  // with allowed
};

class PairingObserver {
 public:
  virtual ~PairingObserver() = default;
  virtual void on_request(const PairingView& request) = 0;
  virtual void on_decided(const PairingView& request, Decision decision) = 0;
};

class PairingBook {
 public:
  PairingBook(boost::asio::any_io_executor ex, GrantBook& grants, PairingMode mode, PairingTimings timings,
              PairingObserver& observer);
  ~PairingBook();
  PairingBook(const PairingBook&) = delete;
  PairingBook& operator=(const PairingBook&) = delete;

  // A page's claim. Waits up to claim_wait for the visitor's answer. `origin` is normalized web.
  // `caller_gone`, asked each time the claim wakes to an answer, says whether the caller has closed
  // its connection: then the answer is left for the page's next claim (the token is returned once, so
  // it must not go to a socket nobody reads; a page whose fetch timed out claims again).
  boost::asio::awaitable<boost::system::result<ClaimAnswer, PairingError>> claim(
      std::string origin, std::optional<std::string> nonce, std::optional<std::string> app, Needs needs,
      std::function<bool()> caller_gone = {});

  // A leuria://connect link registered by the desktop app. Returns the request id.
  boost::system::result<std::string, PairingError> link(const std::string& origin,
                                                        const std::optional<std::string>& nonce,
                                                        std::optional<std::string> app, Needs needs);

  // The visitor's answer. Returns the request as decided. A Yes writes the grant first (its token
  // waits here for the page's claim), so Yes is acknowledged only once it is on disk; when it can't
  // be saved the question stays open, nothing changes, and the error is not_saved.
  boost::system::result<PairingView, PairingError> decide(const std::string& id, bool allow);

  std::optional<PairingView> find(const std::string& id) const;
  std::vector<PairingView> pending() const;

  // True while a question for this origin exists whose answer hasn't been collected: silence
  // is lifted for it.
  bool has_open_request(const std::string& origin) const;

 private:
  struct Request;
  using RequestPtr = std::shared_ptr<Request>;

  RequestPtr by_origin(const std::string& origin) const;
  std::size_t pending_count() const;
  bool cooling_down(const std::string& origin);
  void spend(const std::string& origin, const std::string& nonce);
  bool spent(const std::string& origin, const std::string& nonce) const;
  boost::system::result<RequestPtr, PairingError> create(const std::string& origin, std::string nonce,
                                                         std::optional<std::string> app, Needs needs);
  void renew(const RequestPtr& r, const std::string& nonce, std::optional<std::string> app, const Needs& needs);
  void expire(const RequestPtr& r);
  void forget(const RequestPtr& r);
  void wake(const RequestPtr& r);
  static PairingView view(const Request& r);

  boost::asio::any_io_executor ex_;
  GrantBook& grants_;
  PairingMode mode_;
  PairingTimings timings_;
  PairingObserver& observer_;
  std::map<std::string, RequestPtr> requests_;  // by id
  std::map<std::string, std::chrono::steady_clock::time_point> refused_until_;
  std::map<std::string, std::chrono::steady_clock::time_point> spent_;  // "origin nonce" → until
};

}  // namespace leuria::core
