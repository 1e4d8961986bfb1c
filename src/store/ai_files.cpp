#include "store/ai_files.hpp"

#include <boost/json.hpp>
#include <stdexcept>

#include "json/read.hpp"
#include "store/atomic_file.hpp"

namespace leuria::store {

namespace json = boost::json;

namespace {

// Reads a JSON object file; a missing file is {}. Anything else is an error naming the file.
boost::system::result<json::object, std::string> read_object(const std::filesystem::path& path) {
  std::optional<std::string> text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  if (!text || text->find_first_not_of(" \t\r\n") == std::string::npos) return json::object{};
  auto root = jsonio::read_object(*text);
  if (!root) return path.string() + " is not a valid JSON object (" + root.error().message + "); fix or remove it.";
  return std::move(*root);
}

template <class F>
void update(const std::filesystem::path& path, F&& change) {
  FileLock lock(std::filesystem::path(path) += ".lock");
  remove_stale_temps(path);  // under the lock: left by a writer that was killed
  auto root = read_object(path);
  if (!root) throw std::runtime_error(root.error());
  change(*root);
  write_file_atomic(path, json::serialize(*root) + "\n");
}

std::optional<std::string> str(const json::object& o, std::string_view k) {
  if (auto* v = o.if_contains(k); v && v->is_string()) return std::string(v->as_string());
  return std::nullopt;
}

}  // namespace

boost::system::result<std::vector<core::AgentDef>, std::string> load_agents(const std::filesystem::path& home) {
  auto root = read_object(home / "config.json");
  if (!root) return root.error();
  std::vector<core::AgentDef> out;
  auto* agents = root->if_contains("agents");
  if (!agents || !agents->is_object()) return out;
  for (auto& [id, v] : agents->as_object()) {
    if (!v.is_object()) continue;
    const auto& o = v.as_object();
    core::AgentDef a;
    a.id = std::string(id);
    a.name = str(o, "name").value_or(a.id);
    auto command = str(o, "command");
    if (!command || command->empty()) continue;
    a.command = *command;
    if (auto* args = o.if_contains("args"); args && args->is_array())
      for (auto& x : args->as_array())
        if (x.is_string()) a.args.emplace_back(x.as_string());
    if (auto* env = o.if_contains("env"); env && env->is_object())
      for (auto& [k, x] : env->as_object())
        if (x.is_string()) a.env.emplace_back(std::string(k), std::string(x.as_string()));
    out.push_back(std::move(a));
  }
  return out;
}

void save_agent(const std::filesystem::path& home, const core::AgentDef& a) {
  update(home / "config.json", [&](json::object& root) {
    auto* agents = root.if_contains("agents");
    if (!agents || !agents->is_object()) root["agents"] = json::object{};
    json::array args;
    for (auto& x : a.args) args.push_back(json::string(x));
    json::object env;
    for (auto& [k, v] : a.env) env[k] = v;
    root["agents"].as_object()[a.id] =
        json::object{{"name", a.name}, {"command", a.command}, {"args", std::move(args)}, {"env", std::move(env)}};
  });
}

bool remove_agent(const std::filesystem::path& home, const std::string& id) {
  bool removed = false;
  update(home / "config.json", [&](json::object& root) {
    if (auto* agents = root.if_contains("agents"); agents && agents->is_object())
      removed = agents->as_object().erase(id) > 0;
  });
  return removed;
}

void save_default_ai(const std::filesystem::path& home, const std::string& agent,
                     const std::optional<std::string>& model) {
  update(home / "config.json", [&](json::object& root) {
    root["agent"] = agent;
    if (model) root["model"] = *model; else root.erase("model");
  });
}

void save_embed_choice(const std::filesystem::path& home, const core::EmbedChoice& choice) {
  update(home / "config.json", [&](json::object& root) {
    switch (choice.mode) {
      case core::EmbedChoice::Mode::automatic: root.erase("embed"); break;
      case core::EmbedChoice::Mode::off: root["embed"] = "off"; break;
      case core::EmbedChoice::Mode::chosen:
        root["embed"] = json::object{{"provider", choice.provider}, {"model", choice.model}};
        break;
    }
  });
}

boost::system::result<std::vector<core::ProviderDef>, std::string> load_providers(const std::filesystem::path& home) {
  const auto path = home / "providers.json";
  auto root = read_object(path);
  if (!root) return root.error();
  std::vector<core::ProviderDef> out;
  auto* list = root->if_contains("providers");
  if (!list || !list->is_array()) return out;
  for (auto& v : list->as_array()) {
    if (!v.is_object()) continue;
    const auto& o = v.as_object();
    core::ProviderDef p;
    p.id = str(o, "id").value_or("");
    p.base_url = str(o, "baseUrl").value_or("");
    if (p.id.empty() || p.base_url.empty()) continue;
    while (p.base_url.size() > 1 && p.base_url.back() == '/') p.base_url.pop_back();
    p.kind = str(o, "kind").value_or("openai");
    p.name = str(o, "name").value_or(p.id);
    p.api_key = str(o, "apiKey");
    out.push_back(std::move(p));
  }
  return out;
}

void save_provider(const std::filesystem::path& home, const core::ProviderDef& p) {
  update(home / "providers.json", [&](json::object& root) {
    auto* list = root.if_contains("providers");
    if (!list || !list->is_array()) root["providers"] = json::array{};
    auto& providers = root["providers"].as_array();
    json::object entry{{"id", p.id}, {"kind", p.kind}, {"name", p.name}, {"baseUrl", p.base_url}};
    if (p.api_key) entry["apiKey"] = *p.api_key;
    for (auto& v : providers)
      if (v.is_object() && str(v.as_object(), "id") == p.id) {
        v = std::move(entry);
        return;
      }
    providers.push_back(std::move(entry));
  });
}

bool remove_provider(const std::filesystem::path& home, const std::string& id) {
  bool removed = false;
  update(home / "providers.json", [&](json::object& root) {
    auto* list = root.if_contains("providers");
    if (!list || !list->is_array()) return;
    json::array kept;
    for (auto& v : list->as_array()) {
      if (v.is_object() && str(v.as_object(), "id") == id) removed = true;
      else kept.push_back(v);
    }
    root["providers"] = std::move(kept);
  });
  return removed;
}

}  // namespace leuria::store
