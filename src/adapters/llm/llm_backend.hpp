// The llm door: a model on an OpenAI-compatible server, driven by our own tool loop. The page's
// tools are called in-process through the session's tool registry, with no HTTP hop.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/json/array.hpp>
#include <memory>

#include "core/ai_catalog.hpp"
#include "core/backend.hpp"
#include "http/client.hpp"

namespace leuria::llm {

class LlmBackend final : public core::AgentBackend, public std::enable_shared_from_this<LlmBackend> {
 public:
  LlmBackend(boost::asio::any_io_executor ex, core::ProviderDef provider, std::optional<std::string> model,
             core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools,
             std::chrono::milliseconds stall = std::chrono::minutes(5));

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

  boost::asio::any_io_executor ex_;
  core::ProviderDef provider_;
  std::optional<std::string> model_;
  core::BackendSink& sink_;
  std::shared_ptr<core::ToolRegistry> tools_;
  // The longest silence allowed from the server while it answers (LEURIA_TEST_TIMINGS modelStallMs).
  std::chrono::milliseconds stall_;
  core::BackendConfig config_;
  boost::json::array messages_;  // the conversation so far
  std::shared_ptr<http::Abort> abort_;
  bool cancelled_ = false;
  bool shut_down_ = false;
};

}  // namespace leuria::llm
