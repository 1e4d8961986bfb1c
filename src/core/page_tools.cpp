#include "core/page_tools.hpp"

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "core/permission.hpp"
#include "core/random.hpp"

namespace leuria::core {

namespace asio = boost::asio;

std::string duration_in_words(std::chrono::milliseconds d) {
  auto say = [](long long n, const char* unit) { return std::to_string(n) + unit + (n == 1 ? "" : "s"); };
  const long long ms = d.count();
  if (ms > 0 && ms % 60'000 == 0) return say(ms / 60'000, " minute");
  if (ms > 0 && ms % 1000 == 0) return say(ms / 1000, " second");
  return say(ms, " millisecond");
}

static_assert(kMaxToolNameLength + std::char_traits<char>::length(kPageToolPrefix) == 64,
              "a page tool's name as Claude sees it must fit the Anthropic API's 64 characters");

bool valid_tool_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxToolNameLength) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

PageTools::PageTools(asio::any_io_executor ex, std::chrono::milliseconds call_timeout)
    : PageTools(std::move(ex), call_timeout, random_base64url({16, kTokenBytes, 6})) {}

PageTools::PageTools(asio::any_io_executor ex, std::chrono::milliseconds call_timeout, std::vector<std::string> secrets)
    : ex_(ex), call_timeout_(call_timeout), channel_id_(std::move(secrets[0])), channel_token_(std::move(secrets[1])),
      deadline_timer_(ex), call_salt_(std::move(secrets[2])) {}

// Waiting calls' handlers are dropped unrun: whoever waits on one holds this object, so only the
// io_context's end gets here with calls waiting.
PageTools::~PageTools() = default;

bool PageTools::channel_token_valid(std::string_view token) const {
  return !ended_ && constant_time_equal(token, channel_token_);
}

void PageTools::attach(std::shared_ptr<PageLink> link) {
  if (ended_) {
    link->close();
    return;
  }
  if (link_) link_->close();  // a new socket replaces the old one
  link_ = std::move(link);
}

void PageTools::detach(const PageLink* link) {
  if (link_.get() != link) return;
  link_.reset();
  // The socket that would carry the answers is gone: the calls it carried fail now, not in 10 minutes.
  fail_all(PageAnswer{PageAnswer::Status::dropped, "The page disconnected before it answered", {}});
}

void PageTools::fail_all(const PageAnswer& a) {
  auto calls = std::move(pending_);
  pending_.clear();
  for (auto& p : calls) p.done(a);
}

bool PageTools::has_tool(const std::string& name) const {
  return std::any_of(tools_.begin(), tools_.end(), [&](const Declared& d) { return d.spec.name == name; });
}

namespace {

// Replaces the item with the same key, else appends it while the list has room. False when full.
template <class T, class Key>
bool upsert(std::vector<T>& items, T item, Key key) {
  for (auto& existing : items) {
    if (key(existing) == key(item)) {
      existing = std::move(item);
      return true;
    }
  }
  if (items.size() >= kMaxPageItems) return false;
  items.push_back(std::move(item));
  return true;
}

}  // namespace

bool PageTools::add_tool(ToolSpec spec, std::string annotations_json) {
  if (ended_ || !valid_tool_name(spec.name)) return false;  // an ended session declares nothing
  if (!upsert(tools_, Declared{std::move(spec), std::move(annotations_json)},
              [](const Declared& d) { return d.spec.name; }))
    return false;
  notify_changed();
  return true;
}

void PageTools::remove_tool(const std::string& name) {
  auto before = tools_.size();
  std::erase_if(tools_, [&](const Declared& d) { return d.spec.name == name; });
  if (tools_.size() != before) notify_changed();
}

bool PageTools::add_resource(ResourceSpec spec) {
  if (ended_) return false;
  return upsert(resources_, std::move(spec), [](const ResourceSpec& r) { return r.uri; });
}

bool PageTools::add_prompt(PromptSpec spec) {
  if (ended_) return false;
  return upsert(prompts_, std::move(spec), [](const PromptSpec& p) { return p.name; });
}

void PageTools::notify_changed() {
  auto listeners = std::move(changed_);  // a listener may add others
  changed_.clear();
  for (auto& f : listeners)
    if (f()) changed_.push_back(std::move(f));
}

std::vector<ToolSpec> PageTools::tools() const {
  std::vector<ToolSpec> out;
  for (auto& d : tools_) out.push_back(d.spec);
  return out;
}

std::string PageTools::start(PageCall::Kind kind, std::string name, std::string arguments_json, AnswerHandler done,
                             std::string tag) {
  auto now = [&](PageAnswer::Status status, const char* text) {
    done(PageAnswer{status, text, {}});
    return std::string();
  };
  if (ended_) return now(PageAnswer::Status::ended, "The session has ended");
  if (!link_) return now(PageAnswer::Status::not_connected, "The page is not connected");
  if (!tag.empty() && !early_cancels_.empty()) {
    const auto stale = std::chrono::steady_clock::now() - kEarlyCancelKept;
    std::erase_if(early_cancels_, [&](const EarlyCancel& c) { return c.at < stale; });
    auto it = std::find_if(early_cancels_.begin(), early_cancels_.end(), [&](const EarlyCancel& c) { return c.tag == tag; });
    if (it != early_cancels_.end()) {
      early_cancels_.erase(it);
      return now(PageAnswer::Status::cancelled, "The call was cancelled");
    }
  }
  if (pending_.size() >= kMaxPendingCalls) return now(PageAnswer::Status::busy, "Too many calls are waiting for the page");
  PageCall call{kind, "c" + std::to_string(next_call_++) + "-" + call_salt_, std::move(name),
                std::move(arguments_json)};
  pending_.push_back(
      Pending{call.id, std::move(tag), std::chrono::steady_clock::now() + call_timeout_, std::move(done)});
  arm_deadline();
  link_->send_call(call);
  return call.id;
}

void PageTools::arm_deadline() {
  if (deadline_armed_ || pending_.empty()) return;
  deadline_armed_ = true;
  deadline_timer_.expires_at(pending_.front().deadline);
  deadline_timer_.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
    auto self = weak.lock();
    if (!self) return;
    self->deadline_armed_ = false;
    if (!ec) self->expire();
  });
}

void PageTools::expire() {
  const auto now = std::chrono::steady_clock::now();
  const std::string text = "The page did not answer within " + duration_in_words(call_timeout_);
  // One at a time from the front: a handler may start a call, which goes to the back.
  while (!pending_.empty() && pending_.front().deadline <= now) {
    AnswerHandler done = std::move(pending_.front().done);
    pending_.erase(pending_.begin());
    done(PageAnswer{PageAnswer::Status::timed_out, text, {}});
  }
  arm_deadline();
}

asio::awaitable<PageAnswer> PageTools::request(PageCall::Kind kind, std::string name, std::string arguments_json,
                                               std::string tag) {
  auto self = shared_from_this();
  struct Wait {
    explicit Wait(asio::any_io_executor ex) : wake(ex, asio::steady_timer::time_point::max()) {}
    asio::steady_timer wake;
    std::optional<PageAnswer> answer;
  };
  auto wait = std::make_shared<Wait>(ex_);
  start(kind, std::move(name), std::move(arguments_json), [wait](PageAnswer a) {
    wait->answer = std::move(a);
    wait->wake.cancel();
  }, std::move(tag));
  if (!wait->answer) co_await wait->wake.async_wait(asio::as_tuple(asio::use_awaitable));
  co_return std::move(*wait->answer);
}

void PageTools::answer(const std::string& id, PageAnswer a) {
  auto it = std::find_if(pending_.begin(), pending_.end(), [&](const Pending& p) { return p.id == id; });
  if (it == pending_.end()) return;
  AnswerHandler done = std::move(it->done);
  pending_.erase(it);
  done(std::move(a));
}

bool PageTools::cancel_where(const std::function<bool(const Pending&)>& which) {
  auto it = std::find_if(pending_.begin(), pending_.end(), which);
  if (it == pending_.end()) return false;
  AnswerHandler done = std::move(it->done);
  pending_.erase(it);
  done(PageAnswer{PageAnswer::Status::cancelled, "The call was cancelled", {}});
  return true;
}

bool PageTools::cancel(std::string_view tag) {
  if (tag.empty()) return false;
  if (cancel_where([&](const Pending& p) { return p.tag == tag; })) return true;
  if (early_cancels_.size() >= kMaxPendingCalls) early_cancels_.erase(early_cancels_.begin());
  early_cancels_.push_back(EarlyCancel{std::string(tag), std::chrono::steady_clock::now()});
  return false;
}

bool PageTools::cancel_call(std::string_view id) {
  return !id.empty() && cancel_where([&](const Pending& p) { return p.id == id; });
}

void PageTools::end() {
  if (ended_) return;
  ended_ = true;  // from here on_tools_changed keeps no new listener
  if (link_) {
    auto link = std::move(link_);
    link->close();
  }
  fail_all(PageAnswer{PageAnswer::Status::ended, "The session has ended", {}});
  // An ended session is kept readable for a while, but nothing asks for its tools any more: what
  // the page declared (up to 256 tools, resources and prompts of 64 KB each) goes now.
  tools_ = {};
  resources_ = {};
  prompts_ = {};
  early_cancels_ = {};
  // Those who listen for changes hear this one last (the list is now empty), then are dropped: an MCP
  // client's stream of them ends with the session, not at its next keep-alive.
  notify_changed();
  changed_.clear();
}

namespace {
// The tag of the calls the in-process caller (the engine's own tool loop) waits on; one turn at a time.
constexpr std::string_view kInProcess = "\x01in-process";
}  // namespace

asio::awaitable<ToolResult> PageTools::call(std::string name, std::string arguments_json) {
  auto self = shared_from_this();
  if (!has_tool(name)) co_return ToolResult{true, "Unknown tool: " + name};
  // A model's arguments that are no JSON object (small local models often write broken JSON) go back to
  // it as the call's error, so it can try again; sent on as {}, the page would run the tool without them.
  std::optional<std::string> refused;
  if (link_) refused = link_->refuse_arguments(arguments_json);
  if (refused) co_return ToolResult{true, std::move(*refused)};
  std::string tag(kInProcess);  // named: no temporaries in a co_await's arguments (GCC 12)
  auto a = co_await request(PageCall::Kind::tool, std::move(name), std::move(arguments_json), std::move(tag));
  co_return ToolResult{a.status != PageAnswer::Status::answered, std::move(a.text)};
}

void PageTools::cancel_calls() {
  while (cancel_where([](const Pending& p) { return p.tag == kInProcess; })) {
  }
  // An agent's calls, over MCP, end as failed calls it reads: an agent that doesn't abort its own call on
  // session/cancel would otherwise wait for the page, and fail at the cancel's grace instead of going idle.
  fail_all(PageAnswer{PageAnswer::Status::failed, "The visitor stopped the turn before the page answered", {}});
}

}  // namespace leuria::core
