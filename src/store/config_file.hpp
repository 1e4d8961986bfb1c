// config.json: the visitor's settings (port, default AI, agent servers, embeddings). Unknown keys are kept.
#pragma once
#include <boost/system/result.hpp>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include "core/embeddings.hpp"

namespace leuria::store {

struct Config {
  std::optional<int> port;
  std::optional<std::string> agent;  // the visitor's default AI id
  std::optional<std::string> model;
  std::map<std::string, std::string> agent_names;  // "agents": {"<id>": {"name": …}}
  core::EmbedChoice embed;  // "embed": "off" | {"provider", "model"}; absent: the first found
};

// A missing file is an empty config. A file that isn't valid gives a sentence naming the problem.
boost::system::result<Config, std::string> load_config(const std::filesystem::path& home);

std::filesystem::path config_path(const std::filesystem::path& home);

}  // namespace leuria::store
