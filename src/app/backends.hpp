// The AIs this engine can run, and the factory that turns a session's AI choice into a backend:
// an ACP agent process (adapters/acp_client) or a model server (adapters/llm).
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <filesystem>

#include "adapters/acp_client/acp_backend.hpp"
#include "adapters/llm/llm_backend.hpp"
#include "core/ai_catalog.hpp"
#include "core/backend.hpp"

namespace leuria::app {

// Configured agents and providers plus the built-in ones. The error is a plain sentence.
boost::system::result<core::AiCatalog, std::string> load_catalog(const std::filesystem::path& home);

class Backends final : public core::BackendFactory {
 public:
  Backends(boost::asio::any_io_executor ex, core::AiCatalog catalog, acp_client::AcpOptions acp,
           std::chrono::milliseconds model_stall)
      : ex_(std::move(ex)), catalog_(std::move(catalog)), acp_(std::move(acp)), model_stall_(model_stall) {}
  boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> make(const core::AiChoice& ai,
                                                                              core::BackendSink& sink,
                                                                              std::shared_ptr<core::ToolRegistry> tools) override;
  const core::AiCatalog& catalog() const { return catalog_; }
  // Sessions started from now on use these AIs; running ones keep theirs.
  void set_catalog(core::AiCatalog catalog) { catalog_ = std::move(catalog); }

 private:
  boost::asio::any_io_executor ex_;
  core::AiCatalog catalog_;
  acp_client::AcpOptions acp_;
  std::chrono::milliseconds model_stall_;  // see llm::LlmBackend
  std::shared_ptr<llm::RecentServers> recent_servers_ = std::make_shared<llm::RecentServers>();
  // Kept-alive connections to the model servers, shared by every session's backend.
  std::shared_ptr<http::ConnectionPool> model_connections_ = std::make_shared<http::ConnectionPool>();
};

}  // namespace leuria::app
