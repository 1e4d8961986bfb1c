// The AIs the visitor can use: ACP agents (config.json "agents" plus the well-known ones found on
// PATH) and model providers (providers.json plus LM Studio and Ollama on this computer).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace leuria::core {

struct AgentDef {
  std::string id;
  std::string name;
  std::string command;
  std::vector<std::string> args;
  std::vector<std::pair<std::string, std::string>> env;
  bool builtin = false;
};

struct ProviderDef {
  std::string id;
  std::string kind;  // openai, lmstudio, ollama
  std::string name;
  std::string base_url;  // ends with /v1 for the built-ins
  std::optional<std::string> api_key;
  bool builtin = false;
};

// The well-known agents; `on_path` says whether a command can be found. Configured agents with the
// same id win.
std::vector<AgentDef> known_agents(const std::function<bool(const std::string&)>& on_path);
std::vector<ProviderDef> builtin_providers();

struct AiCatalog {
  std::vector<AgentDef> agents;
  std::vector<ProviderDef> providers;

  const AgentDef* agent(const std::string& id) const;
  const ProviderDef* provider(const std::string& id) const;
};

// "llm:<provider>[/<model>]" → (provider, model).
std::optional<std::pair<std::string, std::optional<std::string>>> parse_llm_id(const std::string& id);

}  // namespace leuria::core
