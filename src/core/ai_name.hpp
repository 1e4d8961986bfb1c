// Plain names for the visitor's AI, as /health shows them ("Claude Code", "Ollama · qwen3:8b").
#pragma once
#include <map>
#include <optional>
#include <string>

namespace leuria::core {

// The AI the visitor chose: an ACP agent id ("claude-acp", or one from config.json "agents"),
// or a model id "llm:<provider>[/<model>]", plus an optional model.
struct AiChoice {
  std::string agent;
  std::optional<std::string> model;
};

// The default when the visitor has chosen nothing, as in the original engine.
inline constexpr const char* kDefaultAgent = "claude-acp";

// configured_names: agent ids and "llm:<provider id>" → their names (config.json, providers.json).
std::string ai_display_name(const AiChoice& choice, const std::map<std::string, std::string>& configured_names);

}  // namespace leuria::core
