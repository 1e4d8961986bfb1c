#include "app/embed_command.hpp"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <fmt/format.h>

#include <iostream>

#include "adapters/embed/local_embedder.hpp"
#include "app/backends.hpp"
#include "app/cli_guard.hpp"
#include "store/ai_files.hpp"
#include "store/config_file.hpp"
#include "store/home.hpp"

namespace leuria::app {

namespace {

struct Setup {
  std::filesystem::path home;
  core::AiCatalog catalog;
  core::EmbedChoice choice;
};

Setup setup() {
  Setup s;
  s.home = store::home_dir();
  if (auto ok = store::ensure_home(s.home); !ok) throw std::runtime_error(ok.error());
  auto catalog = load_catalog(s.home);
  if (!catalog) throw std::runtime_error(catalog.error());
  s.catalog = std::move(*catalog);
  auto config = store::load_config(s.home);
  if (!config) throw std::runtime_error(config.error());
  s.choice = config->embed;
  return s;
}

// Asks the local services once, with the same discovery the engine uses.
std::vector<embed::ServiceReport> discover(embed::LocalEmbedder& embedder, boost::asio::io_context& ioc) {
  std::vector<embed::ServiceReport> reports;
  boost::asio::co_spawn(ioc, embedder.discover(),
                        [&reports](std::exception_ptr e, std::vector<embed::ServiceReport> r) {
                          if (e) std::rethrow_exception(e);
                          reports = std::move(r);
                        });
  ioc.run();
  return reports;
}

std::string choice_words(const core::EmbedChoice& c) {
  switch (c.mode) {
    case core::EmbedChoice::Mode::off: return "off (pages get 503 no_embedder)";
    case core::EmbedChoice::Mode::chosen: return c.model + " in " + c.provider;
    default: return "automatic (the first embedding model found)";
  }
}

}  // namespace

int embed_show() {
  return guarded([] {
    auto s = setup();
    std::cout << "Choice: " << choice_words(s.choice) << "\n";
    boost::asio::io_context ioc;
    embed::LocalEmbedder embedder(ioc.get_executor(), std::chrono::milliseconds(0));
    embedder.set_providers(s.catalog.providers);
    embedder.set_choice(s.choice);
    std::cerr << "Looking for embedding models in LM Studio and Ollama on this computer…\n";
    auto reports = discover(embedder, ioc);

    struct Row {
      std::string provider, models, status;
    };
    std::vector<Row> rows;
    for (const auto& r : reports) {
      std::string models;
      for (const auto& m : r.embedders) models += (models.empty() ? "" : ", ") + m;
      if (models.empty()) models = "-";
      rows.push_back({r.provider.id, models,
                      r.reachable ? fmt::format("ready, {} models listed", r.models.size()) : r.error});
    }
    for (const auto& p : s.catalog.providers)
      if ((p.kind == "ollama" || p.kind == "lmstudio") && !embed::is_loopback_url(p.base_url))
        rows.push_back({p.id, "-", "never used for embeddings: not on this computer"});
    std::size_t w1 = 10, w2 = 18;
    for (const auto& r : rows) {
      w1 = std::max(w1, r.provider.size() + 2);
      w2 = std::max(w2, r.models.size() + 2);
    }
    std::cout << fmt::format("{:<{}}{:<{}}{}\n", "PROVIDER", w1, "EMBEDDING MODELS", w2, "STATUS");
    for (const auto& r : rows) std::cout << fmt::format("{:<{}}{:<{}}{}\n", r.provider, w1, r.models, w2, r.status);

    auto chosen = embedder.pick(reports);
    if (s.choice.mode == core::EmbedChoice::Mode::off) {
      std::cout << "Pages get no embeddings: they are turned off ('leuria embed auto' turns them on).\n";
    } else if (chosen) {
      std::cout << "Pages get: " << chosen->model << " (" << chosen->provider_name << ")\n";
      if (s.choice.mode == core::EmbedChoice::Mode::chosen && chosen->model != s.choice.model)
        std::cout << "Your choice, " << s.choice.model << ", isn't listed by " << s.choice.provider
                  << " now, so pages get the first one found.\n";
    } else {
      std::cout << "Pages get no embeddings: no embedding model was found. Load one in LM Studio, or run\n"
                   "'ollama pull nomic-embed-text'.\n";
    }
    return 0;
  });
}

int embed_set(const core::EmbedChoice& choice) {
  return guarded([&choice] {
    auto s = setup();
    if (choice.mode == core::EmbedChoice::Mode::chosen) {
      const core::ProviderDef* p = s.catalog.provider(choice.provider);
      if (!p) throw std::runtime_error("There is no provider '" + choice.provider + "'; see 'leuria providers'.");
      if (p->kind != "ollama" && p->kind != "lmstudio")
        throw std::runtime_error("Only LM Studio and Ollama embed for pages, and '" + p->id + "' is neither.");
      if (!embed::is_loopback_url(p->base_url))
        throw std::runtime_error("'" + p->id + "' is not on this computer (" + p->base_url +
                                 "); a page's text never leaves it, so it can't embed.");
    }
    store::save_embed_choice(s.home, choice);
    switch (choice.mode) {
      case core::EmbedChoice::Mode::off:
        std::cout << "Embeddings are off: pages get 503 no_embedder. 'leuria embed auto' turns them back on.\n";
        return 0;
      case core::EmbedChoice::Mode::automatic:
        std::cout << "Pages get the first embedding model found in LM Studio or Ollama.\n";
        return 0;
      default: break;
    }
    std::cout << "Pages get " << choice.model << " from " << choice.provider << " for embeddings.\n";
    // Say so now if the model isn't there, rather than let pages quietly get another one.
    boost::asio::io_context ioc;
    embed::LocalEmbedder embedder(ioc.get_executor(), std::chrono::milliseconds(0));
    embedder.set_providers({*s.catalog.provider(choice.provider)});
    auto reports = discover(embedder, ioc);
    if (reports.empty() || !reports.front().reachable)
      std::cout << "Note: " << choice.provider << " isn't answering now"
                << (reports.empty() ? "" : " (" + reports.front().error + ")") << ".\n";
    else if (std::find(reports.front().models.begin(), reports.front().models.end(), choice.model) ==
             reports.front().models.end())
      std::cout << "Note: " << choice.provider << " doesn't list " << choice.model
                << " now; until it does, pages get the first embedding model found.\n";
    return 0;
  });
}

}  // namespace leuria::app
