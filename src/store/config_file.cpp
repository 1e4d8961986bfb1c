#include "store/config_file.hpp"

#include <sys/stat.h>

#include <boost/json.hpp>

#include "json/read.hpp"
#include "store/atomic_file.hpp"

namespace leuria::store {

namespace json = boost::json;

std::filesystem::path config_path(const std::filesystem::path& home) { return home / "config.json"; }

boost::system::result<Config, std::string> load_config(const std::filesystem::path& home) {
  auto path = config_path(home);
  std::optional<std::string> text;
  try {
    text = read_file(path);
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
  Config c;
  if (!text) return c;
  ::chmod(path.c_str(), 0600);  // the visitor's file may have been created by hand

  auto root = jsonio::read_object(*text);
  if (!root) return path.string() + " is not a valid JSON object (" + root.error().message + "); fix or remove it.";
  const auto& o = *root;
  if (auto* p = o.if_contains("port")) {
    if (!p->is_int64() && !p->is_uint64())
      return path.string() + ": \"port\" must be a whole number from 0 to 65535.";
    // Boost keeps a whole number as uint64 only above 2^63: out of range, without the throwing conversion.
    const std::int64_t n = p->is_int64() ? p->get_int64() : 65536;
    if (n < 0 || n > 65535) return path.string() + ": \"port\" must be a whole number from 0 to 65535.";
    c.port = static_cast<int>(n);
  }
  if (auto* a = o.if_contains("agent"); a && a->is_string()) c.agent = std::string(a->as_string());
  if (auto* m = o.if_contains("model"); m && m->is_string()) c.model = std::string(m->as_string());
  if (auto* agents = o.if_contains("agents"); agents && agents->is_object()) {
    for (auto& [id, def] : agents->as_object()) {
      if (!def.is_object()) continue;
      auto* name = def.as_object().if_contains("name");
      c.agent_names[std::string(id)] = (name && name->is_string()) ? std::string(name->as_string()) : "";
    }
  }
  if (auto* e = o.if_contains("embed")) {
    const std::string bad = path.string() + ": \"embed\" must be \"off\" or {\"provider\": …, \"model\": …}.";
    if (e->is_string()) {
      if (e->as_string() != "off") return bad;
      c.embed.mode = core::EmbedChoice::Mode::off;
    } else if (e->is_object()) {
      auto* prov = e->as_object().if_contains("provider");
      auto* model = e->as_object().if_contains("model");
      if (!prov || !prov->is_string() || !model || !model->is_string() || prov->as_string().empty() ||
          model->as_string().empty())
        return bad;
      c.embed = {core::EmbedChoice::Mode::chosen, std::string(prov->as_string()), std::string(model->as_string())};
    } else if (!e->is_null()) {
      return bad;
    }
  }
  return c;
}

}  // namespace leuria::store
