// The llm door: a model on an OpenAI-compatible server, driven by our own tool loop. The page's
// tools are called in-process through the session's tool registry, with no HTTP hop.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/json/array.hpp>
#include <chrono>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "core/ai_catalog.hpp"
#include "core/backend.hpp"
#include "http/client.hpp"

namespace leuria::llm {

// Model servers that answered a start recently, shared by the backends one factory makes (the io
// thread owns it). A session starting within `fresh_for` of another's successful start skips the
// reachability check, one round trip to the server before its first token; a failed turn forgets
// the server, so the next start checks again. Keyed by address and API key.
class RecentServers {
 public:
  explicit RecentServers(std::chrono::milliseconds fresh_for = std::chrono::seconds(30)) : fresh_for_(fresh_for) {}
  // The model the server offered first, when it answered within fresh_for.
  std::optional<std::string> fresh(const std::string& key) const;
  void reached(const std::string& key, std::string first_model);
  void forget(const std::string& key) { entries_.erase(key); }

 private:
  struct Entry {
    std::chrono::steady_clock::time_point at;
    std::string first_model;
  };
  std::chrono::milliseconds fresh_for_;
  std::map<std::string, Entry> entries_;
};

class LlmBackend final : public core::AgentBackend, public std::enable_shared_from_this<LlmBackend> {
 public:
  LlmBackend(boost::asio::any_io_executor ex, core::ProviderDef provider, std::optional<std::string> model,
             core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools,
             std::chrono::milliseconds stall = std::chrono::minutes(5),
             std::shared_ptr<RecentServers> recent = nullptr, std::shared_ptr<http::ConnectionPool> pool = nullptr);

  boost::asio::awaitable<boost::system::result<void, std::string>> start(core::BackendConfig config) override;
  bool accepts_images() const override;
  boost::asio::awaitable<core::TurnOutcome> prompt(std::vector<core::PromptBlock> blocks) override;
  void cancel_turn() override;
  void shutdown() override;

 private:
  struct Step;
  boost::asio::awaitable<std::optional<std::string>> stream_step(bool forbid_tools, Step& step);
  std::vector<http::Header> auth_headers() const;
  std::string display() const;
  std::string server_key() const;
  // The model refused a request with images in it: they become their notes, in the conversation
  // and for the rest of the session (prompt() takes that back if the notes are refused too).
  void drop_images();

  // First, on one line: what every streamed read asks (bench scenario 7: with 1,000 streams the
  // backend is cold at each read, and these sat 600 bytes apart).
  core::BackendSink& sink_;
  bool cancelled_ = false;
  bool shut_down_ = false;
  boost::asio::any_io_executor ex_;
  core::ProviderDef provider_;
  std::optional<std::string> model_;
  std::shared_ptr<core::ToolRegistry> tools_;
  // The longest silence allowed from the server while it answers (LEURIA_TEST_TIMINGS modelStallMs).
  std::chrono::milliseconds stall_;
  std::shared_ptr<RecentServers> recent_;  // may be null: always check
  std::shared_ptr<http::ConnectionPool> pool_;  // kept-alive connections to model servers (may be null)
  core::BackendConfig config_;
  boost::json::array messages_;  // the conversation so far
  std::shared_ptr<http::Abort> abort_;
  // Whether the model reads images. No server says so for every model (Ollama, LM Studio and hosted
  // APIs each have their own way, if any), so images are sent until the server refuses a request
  // that carries them; then each image in the conversation becomes its note, in the order of
  // `image_notes_`, and the session sends notes from then on.
  bool images_ok_ = true;
  std::vector<std::string> image_notes_;
};

}  // namespace leuria::llm
