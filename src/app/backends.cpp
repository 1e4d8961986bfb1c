#include "app/backends.hpp"

#include "adapters/llm/llm_backend.hpp"
#include "store/ai_files.hpp"
#include "transport/child_process.hpp"

namespace leuria::app {

boost::system::result<core::AiCatalog, std::string> load_catalog(const std::filesystem::path& home) {
  core::AiCatalog c;
  auto agents = store::load_agents(home);
  if (!agents) return agents.error();
  c.agents = std::move(*agents);
  for (auto& known : core::known_agents([](const std::string& cmd) { return transport::find_in_path(cmd).has_value(); }))
    if (!c.agent(known.id)) c.agents.push_back(known);
  auto providers = store::load_providers(home);
  if (!providers) return providers.error();
  c.providers = std::move(*providers);
  for (auto& p : core::builtin_providers())
    if (!c.provider(p.id)) c.providers.push_back(p);
  return c;
}

boost::system::result<std::shared_ptr<core::AgentBackend>, std::string> Backends::make(const core::AiChoice& ai,
                                                                                      core::BackendSink& sink,
                                                                                      std::shared_ptr<core::ToolRegistry> tools) {
  if (auto llm = core::parse_llm_id(ai.agent)) {
    const core::ProviderDef* p = catalog_.provider(llm->first);
    if (!p) return "The model server '" + llm->first + "' isn't set up; see 'leuria providers'.";
    auto model = ai.model ? ai.model : llm->second;
    return std::shared_ptr<core::AgentBackend>(std::make_shared<llm::LlmBackend>(ex_, *p, model, sink, tools, model_stall_, recent_servers_, model_connections_));
  }
  const core::AgentDef* a = catalog_.agent(ai.agent);
  if (!a) return "The AI '" + ai.agent + "' isn't set up; see 'leuria agents'.";
  return std::shared_ptr<core::AgentBackend>(
      std::make_shared<acp_client::AcpBackend>(ex_, *a, ai.model, acp_, sink, tools));
}

}  // namespace leuria::app
