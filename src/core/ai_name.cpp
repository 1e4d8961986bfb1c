#include "core/ai_name.hpp"

#include <array>
#include <string_view>
#include <utility>

namespace leuria::core {
namespace {

constexpr std::array<std::pair<std::string_view, std::string_view>, 6> kKnownAgents{{
    {"claude-acp", "Claude Code"},
    {"claude-code-acp", "Claude Code"},
    {"gemini", "Gemini CLI"},
    {"codex-acp", "Codex"},
    {"codex", "Codex"},
    {"opencode", "OpenCode"},
}};

constexpr std::array<std::pair<std::string_view, std::string_view>, 3> kKnownProviders{{
    {"ollama", "Ollama"},
    {"lmstudio", "LM Studio"},
    {"openai", "OpenAI"},
}};

std::string provider_name(std::string_view id) {
  for (auto& [k, v] : kKnownProviders)
    if (k == id) return std::string(v);
  return std::string(id);
}

}  // namespace

std::string ai_display_name(const AiChoice& choice, const std::map<std::string, std::string>& configured) {
  std::string_view id = choice.agent.empty() ? std::string_view(kDefaultAgent) : std::string_view(choice.agent);
  std::string name;
  std::optional<std::string> model = choice.model;
  if (id.starts_with("llm:")) {
    std::string_view rest = id.substr(4);
    auto slash = rest.find('/');
    auto provider = rest.substr(0, slash);
    auto configured_name = configured.find("llm:" + std::string(provider));
    name = configured_name != configured.end() && !configured_name->second.empty() ? configured_name->second
                                                                                    : provider_name(provider);
    if (slash != std::string_view::npos && !model) model = std::string(rest.substr(slash + 1));
  } else if (auto it = configured.find(std::string(id)); it != configured.end() && !it->second.empty()) {
    name = it->second;
  } else {
    name = std::string(id);
    for (auto& [k, v] : kKnownAgents)
      if (k == id) name = std::string(v);
  }
  if (model && !model->empty()) name += " · " + *model;
  return name;
}

}  // namespace leuria::core
