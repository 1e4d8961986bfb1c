#include "core/session_book.hpp"

#include <algorithm>

#include "core/clock.hpp"
#include "core/random.hpp"

namespace leuria::core {

namespace asio = boost::asio;

AiChoice choose_ai(const Grant* grant, const AiChoice& default_ai) {
  if (grant && grant->agent && !grant->agent->empty()) return AiChoice{*grant->agent, grant->model};
  return default_ai;
}

SessionBook::SessionBook(asio::any_io_executor ex, BackendFactory& factory, SessionLimits limits, std::string mcp_url)
    : ex_(std::move(ex)), factory_(factory), limits_(limits), mcp_url_(std::move(mcp_url)), sweep_timer_(ex_) {}

std::shared_ptr<Session> SessionBook::find_by_registration(std::string_view secret) const {
  for (auto& [id, s] : sessions_)
    if (!is_final(s->status()) && constant_time_equal(secret, s->registration_secret())) return s;
  return nullptr;
}

std::shared_ptr<Session> SessionBook::find_by_channel(std::string_view channel_id) const {
  for (auto& [id, s] : sessions_)
    if (!is_final(s->status()) && s->page_tools().channel_id() == channel_id) return s;
  return nullptr;
}

std::shared_ptr<Session> SessionBook::find_by_channel_token(std::string_view token) const {
  std::shared_ptr<Session> found;
  // Every live session is compared, so the time taken says nothing about which matched.
  for (auto& [id, s] : sessions_)
    if (!is_final(s->status()) && s->page_tools().channel_token_valid(token)) found = s;
  return found;
}

SessionBook::~SessionBook() { end_all(); }

std::size_t SessionBook::live_count(const std::string& origin) const {
  return static_cast<std::size_t>(std::count_if(sessions_.begin(), sessions_.end(), [&](auto& kv) {
    return kv.second->origin() == origin && !is_final(kv.second->status());
  }));
}

boost::system::result<std::shared_ptr<Session>, SessionError> SessionBook::prepare(const std::string& origin,
                                                                                  AiChoice ai,
                                                                                  PrepareRequest request) {
  if (live_count(origin) >= limits_.live_per_origin)
    return SessionError{SessionError::Kind::bad_request,
                        "Too many sessions: this site already has " + std::to_string(limits_.live_per_origin) +
                            " live sessions. Close one first."};
  if (request.max_turns) request.max_turns = std::clamp(*request.max_turns, 1, 50);
  Session::Params p;
  auto secrets = random_base64url({16, kTokenBytes});
  p.id = std::move(secrets[0]);
  p.origin = origin;
  p.created_at = now_iso8601();
  p.registration_secret = std::move(secrets[1]);
  p.ai = std::move(ai);
  p.request = std::move(request);
  p.mcp_url = mcp_url_;
  auto tools = std::make_shared<PageTools>(ex_, limits_.tool_call_timeout);
  auto s = std::make_shared<Session>(ex_, std::move(p), factory_, limits_, std::move(tools),
                                     [this](Session& ended_session) { ended(ended_session); });
  sessions_[s->id()] = s;
  s->on_maybe_unused([this] { arm_sweep(); });
  arm_sweep();
  return s;
}

std::shared_ptr<Session> SessionBook::find(const std::string& id, const std::string& origin) {
  auto it = sessions_.find(id);
  if (it == sessions_.end() || it->second->origin() != origin) return nullptr;
  it->second->touch();  // its owner asked for it: a page is using it
  arm_sweep();  // ...for now: whether it goes on doing so, the sweep sees
  return it->second;
}

// One timer for every session's unused time, every eighth of the limit (on core::coalesced's grid), armed
// only while a live session may be unused: after a prepare, a request, a page's stream or channel gone
// or a turn ended (Session::page_left), and for as long as a sweep finds one counting. An engine whose
// live sessions are all in use, or that has none, is not woken for it. A session is so ended between the
// limit and an eighth more after its page left.
void SessionBook::arm_sweep() {
  if (sweep_armed_ || limits_.unused_timeout <= std::chrono::milliseconds::zero()) return;
  const auto period = std::max<std::chrono::steady_clock::duration>(limits_.unused_timeout / 8, std::chrono::milliseconds(1));
  sweep_armed_ = true;
  sweep_timer_.expires_at(coalesced(std::chrono::steady_clock::now() + period, period));
  sweep_timer_.async_wait([this](boost::system::error_code ec) {
    if (ec) return;  // cancelled: the book is going away
    sweep_armed_ = false;
    sweep();
  });
}

void SessionBook::sweep() {
  const auto now = std::chrono::steady_clock::now();
  // Collected first: an end may forget other sessions (the origin's quota of ended ones).
  std::vector<std::shared_ptr<Session>> live;
  for (auto& [id, s] : sessions_)
    if (!is_final(s->status())) live.push_back(s);
  bool counting = false;
  for (auto& s : live) counting |= s->reap_if_unused(now, limits_.unused_timeout);
  if (counting) arm_sweep();
}

void SessionBook::ended(Session& s) {
  // Readable for `retention`, then forgotten; the origin's oldest goes at once past its quota.
  auto timer = std::make_unique<asio::steady_timer>(ex_, limits_.retention);
  const std::string id = s.id();
  timer->async_wait([this, id, origin = s.origin()](boost::system::error_code ec) {
    if (!ec) forget(id, origin);
  });
  expiry_[id] = std::move(timer);
  // Local processes (origin "") run as the visitor, so only sites have a quota.
  if (s.origin().empty()) return;
  auto& ended = ended_[s.origin()];
  ended.push_back(id);
  if (ended.size() > std::max<std::size_t>(limits_.kept_ended_per_origin, 1)) {
    // A copy: forget() erases the deque entry a reference would point into. (The session forgotten is
    // the oldest, never `s`, whose end() is running: the quota is at least 1.)
    const std::string oldest = ended.front();
    forget(oldest, s.origin());
  }
}

void SessionBook::forget(const std::string& id, const std::string& origin) {
  expiry_.erase(id);  // its timer, cancelled if still waiting (the handler then does nothing)
  sessions_.erase(id);
  auto it = ended_.find(origin);
  if (it == ended_.end()) return;
  auto& ids = it->second;
  if (auto pos = std::find(ids.begin(), ids.end(), id); pos != ids.end()) ids.erase(pos);  // the front, nearly always
  if (ids.empty()) ended_.erase(it);
}

void SessionBook::end_origin(const std::string& origin) {
  std::vector<std::shared_ptr<Session>> live;
  for (auto& [id, s] : sessions_)
    if (s->origin() == origin && !is_final(s->status())) live.push_back(s);
  for (auto& s : live) s->end(SessionStatus::cancelled);
}

std::size_t SessionBook::end_all() {
  std::vector<std::shared_ptr<Session>> live;
  for (auto& [id, s] : sessions_)
    if (!is_final(s->status())) live.push_back(s);
  for (auto& s : live) s->end(SessionStatus::cancelled);
  for (auto& [id, s] : sessions_) s->on_maybe_unused({});  // a session may outlive the book
  for (auto& [id, t] : expiry_) t->cancel();
  sweep_timer_.cancel();
  sweep_armed_ = false;
  return live.size();
}

}  // namespace leuria::core
