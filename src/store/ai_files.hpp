// The visitor's AI settings on disk: agents, the default AI and the embedding model in config.json, model providers in
// providers.json (its API keys live only there, 0600). Every change is read-modify-write, atomic,
// and keeps what it doesn't know.
#pragma once
#include <boost/system/result.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "core/ai_catalog.hpp"
#include "core/embeddings.hpp"

namespace leuria::store {

// config.json "agents" entries that have a command.
boost::system::result<std::vector<core::AgentDef>, std::string> load_agents(const std::filesystem::path& home);
void save_agent(const std::filesystem::path& home, const core::AgentDef& agent);
bool remove_agent(const std::filesystem::path& home, const std::string& id);
// config.json "agent" (and "model", removed when not given).
void save_default_ai(const std::filesystem::path& home, const std::string& agent, const std::optional<std::string>& model);

// config.json "embed": "off", {provider, model}, or removed (automatic).
void save_embed_choice(const std::filesystem::path& home, const core::EmbedChoice& choice);

// config.json "embed": "off", {provider, model}, or removed (automatic).
void save_embed_choice(const std::filesystem::path& home, const core::EmbedChoice& choice);

// providers.json {"providers":[{id, kind, name, baseUrl, apiKey?}]}; a missing file is none.
boost::system::result<std::vector<core::ProviderDef>, std::string> load_providers(const std::filesystem::path& home);
void save_provider(const std::filesystem::path& home, const core::ProviderDef& provider);
bool remove_provider(const std::filesystem::path& home, const std::string& id);

}  // namespace leuria::store
