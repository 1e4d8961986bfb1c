// The acp_client door: an ACP agent process (Claude Code, Gemini CLI, Codex, any ACP agent) as a
// session's AI. Spawned in its own process group, in a fresh empty folder that is removed after,
// with a fixed argument list and none of the engine's secrets in its environment.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>

#include "adapters/acp_client/codec.hpp"
#include "adapters/acp_client/tool_names.hpp"
#include "core/ai_catalog.hpp"
#include "core/backend.hpp"
#include "rpc/connection.hpp"
#include "transport/child_process.hpp"

namespace leuria::acp_client {

struct AcpOptions {
  std::string engine_version;
  std::string engine_path;            // for the stdio MCP bridge
  std::filesystem::path temp_root;    // where leuria-<session> folders are made
  std::vector<std::string> base_env;  // the engine's environment, secrets already removed
  std::chrono::milliseconds kill_grace{3000};
  // How long a turn may go on after the page cancelled it: ACP says the agent answers the prompt
  // with "cancelled"; one that doesn't is stopped and the session fails, so nobody waits forever.
  std::chrono::milliseconds cancel_grace{10000};
};

class AcpBackend final : public core::AgentBackend, public std::enable_shared_from_this<AcpBackend> {
 public:
  AcpBackend(boost::asio::any_io_executor ex, core::AgentDef agent, std::optional<std::string> model,
             AcpOptions options, core::BackendSink& sink, std::shared_ptr<core::ToolRegistry> tools);
  ~AcpBackend() override;

  boost::asio::awaitable<boost::system::result<void, std::string>> start(core::BackendConfig config) override;
  bool accepts_images() const override { return images_; }
  boost::asio::awaitable<core::TurnOutcome> prompt(std::vector<core::PromptBlock> blocks) override;
  void cancel_turn() override;
  void shutdown() override;

 private:
  boost::asio::awaitable<rpc::Result> on_request(std::string method, boost::json::value params);
  void on_notification(const std::string& method, const boost::json::value& params);
  void on_update(Update u);
  void on_exit(int code);
  // The agent broke the protocol or a limit: the session fails with `why` (a plain sentence), which
  // stops the agent.
  void fail(std::string why);
  void remove_folder();
  std::string describe(const rpc::RpcError& e) const;

  boost::asio::any_io_executor ex_;
  core::AgentDef agent_;
  std::optional<std::string> model_;
  AcpOptions options_;
  core::BackendSink& sink_;
  std::shared_ptr<core::ToolRegistry> tools_;
  core::BackendConfig config_;
  std::filesystem::path folder_;
  std::shared_ptr<transport::ChildProcess> child_;
  std::shared_ptr<rpc::Connection> rpc_;
  std::string session_;
  bool images_ = false;
  bool cancelling_ = false;
  bool in_turn_ = false;
  // Counts turns: the cancel deadline is for the turn it was armed in. A prompt that waited behind a
  // cancelled turn starts at once when that turn ends, and a deadline that fired just then must not
  // fail the new turn.
  std::uint64_t turn_seq_ = 0;
  boost::asio::steady_timer cancel_timer_;
  bool shut_down_ = false;
  bool batch_open_ = false;  // the sink's batch for the lines of one read (begun by its first line)
  TextSlot text_slot_;       // the agent's last text chunk line, but for its text (scan_text_update)
  bool system_prompt_sent_ = false;
  ToolNames tool_names_;     // toolCallId → the tool's name, for permissions
};

// The engine's environment for agents: without LEURIA_* (the admin token among them) and without
// CLAUDECODE (which makes Claude Code think it runs inside itself).
std::vector<std::string> agent_environment(char** environ_vars);

}  // namespace leuria::acp_client
