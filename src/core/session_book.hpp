// All sessions: created, found by id for their owner only, limited per origin, kept readable for
// a while after they end (at most limits.kept_ended_per_origin of a site's), and ended together
// when a site's grant or AI changes. A live session no page has used for limits.unused_timeout ends
// (Session::reap_if_unused), found by a sweep that runs only while there are live sessions.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "core/grants.hpp"
#include "core/session.hpp"

namespace leuria::core {

class SessionBook {
 public:
  // mcp_url: where agents reach the page's tools (the engine's MCP endpoint).
  SessionBook(boost::asio::any_io_executor ex, BackendFactory& factory, SessionLimits limits, std::string mcp_url);
  ~SessionBook();

  // origin: normalized web origin, or "" for local processes.
  boost::system::result<std::shared_ptr<Session>, SessionError> prepare(const std::string& origin, AiChoice ai,
                                                                       PrepareRequest request);
  // nullptr unless the session exists and belongs to `origin` (others can't tell it exists).
  std::shared_ptr<Session> find(const std::string& id, const std::string& origin);  // the session is used
  // The unused sessions' sweep is armed (tests).
  bool sweeping() const { return sweep_armed_; }
  std::size_t live_count(const std::string& origin) const;
  // A live session by its WebMCP registration secret (any origin: the secret is the proof).
  std::shared_ptr<Session> find_by_registration(std::string_view secret) const;
  // A live session by its channel id.
  std::shared_ptr<Session> find_by_channel(std::string_view channel_id) const;
  // A live session whose channel token this is (the MCP endpoint's bearer).
  std::shared_ptr<Session> find_by_channel_token(std::string_view token) const;
  // Revocation, or a change of the site's AI: its live sessions end (cancelled) at once.
  void end_origin(const std::string& origin);
  // Every live session ends (cancelled); returns how many were live.
  std::size_t end_all();

  const SessionLimits& limits() const { return limits_; }

 private:
  void ended(Session& s);
  void forget(const std::string& id, const std::string& origin);
  void arm_sweep();
  void sweep();

  boost::asio::any_io_executor ex_;
  BackendFactory& factory_;
  SessionLimits limits_;
  std::string mcp_url_;
  std::map<std::string, std::shared_ptr<Session>> sessions_;
  std::map<std::string, std::unique_ptr<boost::asio::steady_timer>> expiry_;
  std::map<std::string, std::deque<std::string>> ended_;  // origin → its ended sessions' ids, oldest first
  boost::asio::steady_timer sweep_timer_;
  bool sweep_armed_ = false;
};

// The AI for a session of this site: the site's own choice if the visitor made one, else the default.
AiChoice choose_ai(const Grant* grant, const AiChoice& default_ai);

}  // namespace leuria::core
