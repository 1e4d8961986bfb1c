// The page's tools, resources and prompts for one session, and the calls to them. The page reaches
// us over its WebMCP channel (a PageLink the web door provides); the AI calls through the
// ToolRegistry interface (the llm door in-process, ACP agents over the MCP endpoint).
//
// Limits: a call waits at most `call_timeout` (10 minutes); a call while no channel is connected
// fails at once; at most kMaxPendingCalls calls wait at a time; at most kMaxPageItems tools,
// resources and prompts each.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tools.hpp"

namespace leuria::core {

inline constexpr std::size_t kMaxPendingCalls = 64;
inline constexpr std::size_t kMaxPageItems = 256;
// How long a cancel that came before its call is kept: long enough for a call a moment behind it,
// short enough that a cancel for a call already answered can't meet another client's later call with
// the same id (clients that send no Mcp-Session-Id share one name space).
inline constexpr std::chrono::seconds kEarlyCancelKept{10};

struct ResourceSpec {
  std::string uri;
  std::string name;
  std::string description;
  std::string mime_type;
};

struct PromptSpec {
  std::string name;
  std::string description;
  std::string arguments_json;  // a JSON array, as text
};

struct PageCall {
  enum class Kind { tool, resource, prompt } kind = Kind::tool;
  std::string id;
  std::string name;            // tool or prompt name, or resource uri
  std::string arguments_json;  // tool and prompt arguments, as JSON text
};

struct PageAnswer {
  // failed, timed_out, dropped: the page was sent the call and it came back without a result (its error;
  // no answer in time; the page gone before it answered). busy, not_connected: refused before the page was
  // asked. ended: the session is over, the call sent or not. A door may tell these apart (MCP does).
  enum class Status { answered, failed, not_connected, timed_out, dropped, ended, cancelled, busy } status = Status::answered;
  std::string text;   // answered: a string result as is, anything else as JSON text; else why, in words
  std::string json;   // answered: the result as JSON text (resources and prompts are structured)
};

// The page's end of the channel, provided by the web door.
class PageLink {
 public:
  virtual ~PageLink() = default;
  virtual void send_call(const PageCall& call) = 0;
  virtual void close() = 0;
  // Why the channel can't carry these tool arguments, in words for the AI (the core never reads JSON;
  // the door that writes the call does); nothing when it can. Asked for the in-process model's calls,
  // whose arguments are whatever text the model wrote.
  virtual std::optional<std::string> refuse_arguments(std::string_view) const { return std::nullopt; }
};

// Tool names the page may declare: what every agent can put after mcp__webmcp__. Claude Code names a
// tool mcp__webmcp__<name> (13 characters before it) and the Anthropic API refuses any tool name over
// 64 characters, the whole turn with it: so at most 64 - 13.
inline constexpr std::size_t kMaxToolNameLength = 51;
bool valid_tool_name(std::string_view name);

// "10 minutes", "1 minute", "90 seconds", "600 milliseconds": a call timeout, exactly, as the AI reads it
// (10 minutes but in tests).
std::string duration_in_words(std::chrono::milliseconds d);

class PageTools final : public ToolRegistry, public std::enable_shared_from_this<PageTools> {
 public:
  PageTools(boost::asio::any_io_executor ex, std::chrono::milliseconds call_timeout);
  ~PageTools() override;

  // The channel's credentials, fixed for the session's life.
  const std::string& channel_id() const { return channel_id_; }
  bool channel_token_valid(std::string_view token) const;
  const std::string& channel_token() const { return channel_token_; }

  // A page connected (replacing any earlier socket) or went away.
  void attach(std::shared_ptr<PageLink> link);
  void detach(const PageLink* link);
  bool connected() const { return link_ != nullptr; }

  // Declarations. False when a limit is reached (or the tool's name isn't valid).
  bool add_tool(ToolSpec spec, std::string annotations_json);
  void remove_tool(const std::string& name);
  bool add_resource(ResourceSpec spec);
  bool add_prompt(PromptSpec spec);
  struct Declared {
    ToolSpec spec;
    std::string annotations_json;
  };
  const std::vector<Declared>& declared_tools() const { return tools_; }
  const std::vector<ResourceSpec>& resources() const { return resources_; }
  const std::vector<PromptSpec>& prompts() const { return prompts_; }
  bool has_tool(const std::string& name) const;

  // Runs when the tool list changes (MCP clients that keep a stream open get told), and once more
  // when the session ends (then never again); a listener that returns false is dropped.
  void on_tools_changed(std::function<bool()> f) {
    if (!ended_) changed_.push_back(std::move(f));  // after the end there is nothing more to hear
  }

  // A call to the page. `done` runs exactly once, with the page's answer or the call's failure:
  // from answer(), as the page's message is read (so the caller can write it out with no trip
  // through the scheduler); from detach() or end(); when the call times out; or before start()
  // returns, when it fails at once (not connected, ended, too many waiting). `done` must not own
  // this object: it is kept here until it runs.
  // `tag`: the caller's own name for the call, for cancel() (empty: none). Returns the call's id, for
  // cancel_call() (empty when it ended at once).
  using AnswerHandler = std::function<void(PageAnswer)>;
  std::string start(PageCall::Kind kind, std::string name, std::string arguments_json, AnswerHandler done,
                    std::string tag = {});
  // The caller gave up on the call tagged `tag` (an MCP client's notifications/cancelled): it ends now,
  // `cancelled`, and frees its place among the kMaxPendingCalls. The page, which has no cancel message,
  // may still answer; that answer is dropped, as a late one is. A tag no call waits under is kept for
  // kEarlyCancelKept (the last kMaxPendingCalls of them): a cancel may overtake its call (`leuria
  // mcp-stdio` forwards each line on its own request), and the call then ends as it starts. False when
  // no call waited.
  bool cancel(std::string_view tag);
  // The same for the call `id` start() returned (its client went away).
  bool cancel_call(std::string_view id);
  // The same, awaited.
  boost::asio::awaitable<PageAnswer> request(PageCall::Kind kind, std::string name, std::string arguments_json,
                                             std::string tag = {});
  // The page answered call `id` (unknown ids are ignored: late answers to timed-out calls).
  void answer(const std::string& id, PageAnswer a);
  // The session ended: the channel closes and waiting calls fail.
  void end();

  // ToolRegistry
  std::vector<ToolSpec> tools() const override;
  boost::asio::awaitable<ToolResult> call(std::string name, std::string arguments_json) override;
  void cancel_calls() override;

 private:
  struct Pending {
    std::string id;
    std::string tag;
    std::chrono::steady_clock::time_point deadline;
    AnswerHandler done;
  };
  void notify_changed();
  bool cancel_where(const std::function<bool(const Pending&)>& which);
  // Ends every waiting call with `a` (the handlers may start new calls meanwhile).
  void fail_all(const PageAnswer& a);
  // One timer for the calls' deadlines, armed for the oldest call and never cancelled: an answer
  // touches no timer (a cancel is a trip through the scheduler, and a poll of the reactor, per call).
  // When it fires it ends the calls past their deadline and is armed for the oldest left.
  void arm_deadline();
  void expire();
  // `secrets`: the channel's id, its token and the calls' salt, drawn together (core/random.hpp).
  PageTools(boost::asio::any_io_executor ex, std::chrono::milliseconds call_timeout, std::vector<std::string> secrets);

  boost::asio::any_io_executor ex_;
  std::chrono::milliseconds call_timeout_;
  std::string channel_id_;
  std::string channel_token_;
  std::shared_ptr<PageLink> link_;
  std::vector<Declared> tools_;
  std::vector<ResourceSpec> resources_;
  std::vector<PromptSpec> prompts_;
  // In the order the calls started, which is their deadlines' order (one timeout for all); at most
  // kMaxPendingCalls, so a search is a short walk.
  std::vector<Pending> pending_;
  boost::asio::steady_timer deadline_timer_;
  bool deadline_armed_ = false;
  std::vector<std::function<bool()>> changed_;
  std::uint64_t next_call_ = 1;
  // A call's id is "c<n>-<salt>": unique in the session by its number, and unlike another session's
  // by this salt, drawn once. A draw per call from OpenSSL's generator was 7,000 instructions, 8% of
  // a tool call's (bench scenario 4, callgrind); nothing needs a call's id to be unguessable, since
  // only the page's own authenticated channel can answer it.
  std::string call_salt_;
  bool ended_ = false;
  struct EarlyCancel {
    std::string tag;
    std::chrono::steady_clock::time_point at;
  };
  std::vector<EarlyCancel> early_cancels_;  // tags cancelled before their call came, oldest first
};

}  // namespace leuria::core
