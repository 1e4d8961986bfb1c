#include "app/ai_commands.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <iostream>

#include "app/backends.hpp"
#include "app/cli_guard.hpp"
#include "core/ai_name.hpp"
#include "core/origin.hpp"
#include "http/client.hpp"
#include "store/ai_files.hpp"
#include "store/config_file.hpp"
#include "store/grants_file.hpp"
#include "store/home.hpp"
#include "transport/child_process.hpp"

namespace leuria::app {

namespace {

std::filesystem::path home() {
  auto h = store::home_dir();
  if (auto ok = store::ensure_home(h); !ok) throw std::runtime_error(ok.error());
  return h;
}

// Whether each model server answers its /models, all at once, within 2 s.
std::vector<std::string> probe_providers(const std::vector<core::ProviderDef>& providers) {
  std::vector<std::string> status(providers.size(), "not reachable");
  boost::asio::io_context ioc;
  for (std::size_t i = 0; i < providers.size(); ++i) {
    http::ClientRequest req;
    req.url = providers[i].base_url + "/models";
    req.connect_timeout = std::chrono::seconds(2);
    req.read_timeout = std::chrono::seconds(2);
    if (providers[i].api_key) req.headers.push_back({"Authorization", "Bearer " + *providers[i].api_key});
    boost::asio::co_spawn(ioc, http::fetch(ioc.get_executor(), req),
                          [&status, i, url = providers[i].base_url](std::exception_ptr, http::ClientResult r) {
                            if (r.status / 100 == 2) status[i] = "ready";
                            else if (r.status) status[i] = "answered HTTP " + std::to_string(r.status);
                            else status[i] = "not reachable at " + url;
                          });
  }
  ioc.run_for(std::chrono::seconds(3));
  return status;
}

}  // namespace

int agents_list() {
  return guarded([] {
    auto h = home();
    auto catalog = load_catalog(h);
    if (!catalog) throw std::runtime_error(catalog.error());
    auto config = store::load_config(h);
    const std::string current = config && config->agent ? *config->agent : core::kDefaultAgent;
    std::cout << fmt::format("{:<2}{:<24}{:<18}{}\n", "", "ID", "NAME", "STATUS");
    for (auto& a : catalog->agents) {
      auto found = transport::find_in_path(a.command);
      std::string status = found ? "ready" : "not found: '" + a.command + "' is not on PATH";
      std::cout << fmt::format("{:<2}{:<24}{:<18}{}\n", a.id == current ? "*" : "", a.id, a.name, status);
    }
    auto status = probe_providers(catalog->providers);
    for (std::size_t i = 0; i < catalog->providers.size(); ++i) {
      const auto& p = catalog->providers[i];
      const std::string id = "llm:" + p.id;
      std::cout << fmt::format("{:<2}{:<24}{:<18}{}\n", current.starts_with(id) ? "*" : "", id, p.name, status[i]);
    }
    std::cout << "\n* is your default. Change it with 'leuria agents use <id>' (models: llm:<server>/<model>).\n";
    return 0;
  });
}

int agents_add(const AgentsAdd& a) {
  return guarded([&] {
    if (a.id.starts_with("llm:")) {
      std::cerr << "leuria: ids starting with 'llm:' are for model servers; use 'leuria providers add'.\n";
      return 1;
    }
    core::AgentDef def{a.id, a.id, a.command, a.args, {}, false};
    store::save_agent(home(), def);
    std::cout << "Added " << a.id << " (" << a.command << ").";
    if (!transport::find_in_path(a.command)) std::cout << " Note: '" << a.command << "' is not on PATH yet.";
    std::cout << "\n";
    return 0;
  });
}

int agents_remove(const AgentsRemove& a) {
  return guarded([&] {
    if (!store::remove_agent(home(), a.id)) {
      std::cerr << "leuria: No agent '" << a.id << "' was added; 'leuria agents' lists them.\n";
      return 1;
    }
    std::cout << "Removed " << a.id << ".\n";
    return 0;
  });
}

int agents_use(const AgentsUse& a) {
  return guarded([&] {
    if (auto ok = set_default_agent(a.id, a.model); !ok) {
      std::cerr << "leuria: " << ok.error() << "\n";
      return 1;
    }
    std::cout << a.id << (a.model ? " (" + *a.model + ")" : std::string()) << " is now your default AI. "
              << "A running engine gives it to the sessions started from now on; running sessions keep theirs, "
              << "and sites with their own AI ('leuria sites use') keep it.\n";
    return 0;
  });
}

int providers_list() {
  return guarded([] {
    auto catalog = load_catalog(home());
    if (!catalog) throw std::runtime_error(catalog.error());
    auto status = probe_providers(catalog->providers);
    std::cout << fmt::format("{:<16}{:<10}{:<38}{}\n", "ID", "KIND", "URL", "STATUS");
    for (std::size_t i = 0; i < catalog->providers.size(); ++i) {
      const auto& p = catalog->providers[i];
      std::cout << fmt::format("{:<16}{:<10}{:<38}{}{}\n", p.id, p.kind, p.base_url, status[i],
                               p.api_key ? " (key set)" : "");
    }
    return 0;
  });
}

int providers_add(const ProvidersAdd& p) {
  return guarded([&] {
    if (!(p.url.starts_with("http://") || p.url.starts_with("https://"))) {
      std::cerr << "leuria: the URL must start with http:// or https://, e.g. http://127.0.0.1:8080/v1.\n";
      return 1;
    }
    std::string url = p.url;
    while (url.size() > 1 && url.back() == '/') url.pop_back();
    const bool loopback = url.starts_with("http://127.") || url.starts_with("http://localhost:") ||
                          url.starts_with("http://localhost/") || url.starts_with("http://[::1]");
    if (p.key && url.starts_with("http://") && !loopback) {
      std::cerr << "leuria: a key would cross the network unencrypted; use an https:// URL for " << p.id << ".\n";
      return 1;
    }
    store::save_provider(home(), core::ProviderDef{p.id, "openai", p.id, url, p.key, false});
    std::cout << "Added llm:" << p.id << " (" << url << ").\n";
    return 0;
  });
}

int providers_remove(const ProvidersRemove& p) {
  return guarded([&] {
    if (!store::remove_provider(home(), p.id)) {
      std::cerr << "leuria: No server '" << p.id << "' was added; 'leuria providers' lists them.\n";
      return 1;
    }
    std::cout << "Removed llm:" << p.id << ".\n";
    return 0;
  });
}

int sites_use(const SitesUse& u) {
  return guarded([&] {
    auto origin = core::normalize_web_origin(u.origin);
    if (!origin) {
      std::cerr << "leuria: '" << u.origin << "' is not a site origin; write it like https://example.com.\n";
      return 1;
    }
    std::optional<std::string> agent;
    if (u.agent != "default") agent = u.agent;
    store::GrantsFile grants(home(), [](const std::string& m) { std::cerr << "leuria: " << m << "\n"; });
    if (!grants.set_site_ai(*origin, agent, u.model)) {
      std::cerr << "leuria: No grant for " << *origin << "; 'leuria sites' lists the connected sites.\n";
      return 1;
    }
    std::cout << *origin << " now uses " << (agent ? *agent : std::string("your default AI"))
              << (agent && u.model ? " (" + *u.model + ")" : std::string()) << ". Its live sessions end.\n";
    return 0;
  });
}

boost::system::result<void, std::string> set_default_agent(const std::string& id,
                                                           const std::optional<std::string>& model) {
  try {
    auto h = home();
    auto catalog = load_catalog(h);
    if (!catalog) return catalog.error();
    if (model && model->empty()) return std::string("--model needs a model's name.");
    if (auto llm = core::parse_llm_id(id)) {
      if (!catalog->provider(llm->first)) return "There is no model server '" + llm->first + "'; see 'leuria providers'.";
      if (llm->second && model)
        return "Name the model once: in the id (llm:<server>/<model>) or with --model, not both.";
    } else if (!catalog->agent(id)) {
      return "There is no AI '" + id + "'; 'leuria agents' lists them.";
    }
    store::save_default_ai(h, id, model);
    return {};
  } catch (const std::exception& e) {
    return std::string(e.what());
  }
}

}  // namespace leuria::app
