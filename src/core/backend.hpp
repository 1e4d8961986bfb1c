// The agent backend: one running AI for one session. Two doors implement it: acp_client (an agent
// process over ACP) and llm (a model server with our own tool loop). The core never knows which.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/ai_name.hpp"
#include "core/events.hpp"
#include "core/tools.hpp"

namespace leuria::core {

// What a backend reports while it runs. Implemented by the session.
class BackendSink {
 public:
  virtual ~BackendSink() = default;
  virtual void on_chunk(std::string text) = 0;
  virtual void on_thought(std::string text) = 0;
  virtual void on_tool_call(ToolCallInfo call) = 0;
  virtual void on_permission(PermissionInfo decision) = 0;
  virtual void on_log(std::string line) = 0;
  // The AI went away on its own (an agent process exited). code 0 completes the session.
  virtual void on_exit(int code) = 0;
  // The AI broke its side of the protocol or a limit and must be stopped: the session fails with
  // `error`, a plain sentence (and the backend is shut down).
  virtual void on_failed(std::string error) = 0;
  // Backpressure: a backend awaits this before it reads more of the AI's output. It returns when
  // the readers have room (at once when they do); while it waits the AI's bytes stay in the
  // kernel's buffers, and a model server or agent writing into them is paused.
  virtual boost::asio::awaitable<void> room() { co_return; }
  // room() would wait now. A backend asks this first and awaits room() only when it says so: a
  // check, not two coroutine frames, on every read of a stream that is flowing.
  virtual bool must_wait() const { return false; }

  // What one read of the AI's output gave is handed over inside a Batch: its text wakes no reader
  // event by event; at the batch's end each reader writes it at once, in one write. Batches nest.
  virtual void begin_batch() {}
  virtual void end_batch() {}
  class Batch {
   public:
    explicit Batch(BackendSink& sink) : sink_(sink) { sink_.begin_batch(); }
    ~Batch() { sink_.end_batch(); }
    Batch(const Batch&) = delete;
    Batch& operator=(const Batch&) = delete;

   private:
    BackendSink& sink_;
  };
};

struct PromptBlock {
  enum class Type { text, image } type = Type::text;
  std::string text;       // text; for an image, the note an AI that can't read it gets instead
  std::string mime_type;  // image
  std::string data;       // image, base64
};

struct BackendConfig {
  std::string session_id;
  std::optional<std::string> system_prompt;
  int max_turns = 10;
  // The page's own maxTurns, when it gave one: an agent with a loop of its own is capped only then
  // (max_turns above is the engine's default otherwise, for its own tool loop).
  std::optional<int> asked_max_turns;
  AiChoice ai;
  // Where the AI reaches the page's tools over MCP (empty until the page-tools door exists).
  std::string mcp_url;
  std::string mcp_token;
};

struct TurnOutcome {
  enum class End { done, cancelled, failed } end = End::done;
  std::string error;  // with failed: a plain sentence
};

class AgentBackend {
 public:
  virtual ~AgentBackend() = default;
  // Starts the AI. The error is a plain sentence for the page's `failed` event.
  virtual boost::asio::awaitable<boost::system::result<void, std::string>> start(BackendConfig config) = 0;
  // Whether prompts may carry image blocks (known after start).
  virtual bool accepts_images() const = 0;
  // One turn. Events flow to the sink while it runs.
  virtual boost::asio::awaitable<TurnOutcome> prompt(std::vector<PromptBlock> blocks) = 0;
  // Asks the running turn to stop; prompt() then returns cancelled.
  virtual void cancel_turn() = 0;
  // Ends the AI and frees what it holds (processes, folders, sockets). Asynchronous; the backend
  // keeps itself alive until done, and calls no sink method after this.
  virtual void shutdown() = 0;
};

// Builds the backend for an AI choice, or says in plain words why it can't.
class BackendFactory {
 public:
  virtual ~BackendFactory() = default;
  // The backend shares the tool registry: a tool call in flight keeps it alive past the session.
  virtual boost::system::result<std::shared_ptr<AgentBackend>, std::string> make(
      const AiChoice& ai, BackendSink& sink, std::shared_ptr<ToolRegistry> tools) = 0;
};

}  // namespace leuria::core
