#include "core/ai_catalog.hpp"

namespace leuria::core {

std::vector<AgentDef> known_agents(const std::function<bool(const std::string&)>& on_path) {
  std::vector<AgentDef> out;
  // Claude Code: the current adapter, else the older one.
  AgentDef claude{"claude-acp", "Claude Code", on_path("claude-agent-acp") || !on_path("claude-code-acp")
                                                   ? "claude-agent-acp"
                                                   : "claude-code-acp",
                  {}, {}, true};
  out.push_back(claude);
  // Gemini CLI connects MCP servers only in a trusted folder.
  out.push_back(AgentDef{"gemini", "Gemini CLI", "gemini", {"--acp"}, {{"GEMINI_CLI_TRUST_WORKSPACE", "true"}}, true});
  out.push_back(AgentDef{"codex-acp", "Codex", "codex-acp", {}, {}, true});
  return out;
}

std::vector<ProviderDef> builtin_providers() {
  return {
      ProviderDef{"lmstudio", "lmstudio", "LM Studio", "http://127.0.0.1:1234/v1", std::nullopt, true},
      ProviderDef{"ollama", "ollama", "Ollama", "http://127.0.0.1:11434/v1", std::nullopt, true},
  };
}

const AgentDef* AiCatalog::agent(const std::string& id) const {
  for (const auto& a : agents)
    if (a.id == id) return &a;
  return nullptr;
}

const ProviderDef* AiCatalog::provider(const std::string& id) const {
  for (const auto& p : providers)
    if (p.id == id) return &p;
  return nullptr;
}

std::optional<std::pair<std::string, std::optional<std::string>>> parse_llm_id(const std::string& id) {
  if (!id.starts_with("llm:") || id.size() == 4) return std::nullopt;
  std::string rest = id.substr(4);
  auto slash = rest.find('/');
  if (slash == std::string::npos) return std::pair{rest, std::optional<std::string>{}};
  std::string model = rest.substr(slash + 1);
  return std::pair{rest.substr(0, slash), model.empty() ? std::nullopt : std::optional(model)};
}

}  // namespace leuria::core
