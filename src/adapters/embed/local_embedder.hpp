// The embed door: finds embedding models in LM Studio and Ollama on this computer, and embeds
// with the one the visitor chose (config.json "embed"), else the first one found. Only
// providers on a loopback address are ever asked, so a page's text never leaves the machine.
//
// Discovery reads each service's own listing (Ollama /api/tags + /api/show, LM Studio
// /api/v0/models, else /v1/models) and is kept for `cache_for` (10 s), so /health and a burst of
// /embed calls don't ask again. Concurrent askers share one discovery. Runs on the engine's
// io thread; no locks. A discovery runs on its own: askers wait for it, /health only briefly.
#pragma once
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <vector>

#include "core/ai_catalog.hpp"
#include "core/embeddings.hpp"

namespace leuria::embed {

// What one local service said: whether it answered, and its models.
struct ServiceReport {
  core::ProviderDef provider;
  bool reachable = false;
  std::string error;                      // why not, when it isn't
  std::vector<std::string> models;        // everything it lists
  std::vector<std::string> embedders;     // those that embed, in the order to prefer them
};

// http://127.0.0.1…, http://[::1]…, http://localhost…
bool is_loopback_url(const std::string& url);

class LocalEmbedder final : public core::Embedder {
 public:
  LocalEmbedder(boost::asio::any_io_executor ex, std::chrono::milliseconds cache_for);

  // Keeps the providers of kind "ollama" and "lmstudio" on a loopback address, in order.
  void set_providers(const std::vector<core::ProviderDef>& providers);
  void set_choice(core::EmbedChoice choice);
  const core::EmbedChoice& choice() const { return choice_; }

  boost::asio::awaitable<std::optional<core::EmbedModel>> current(std::chrono::milliseconds wait_at_most) override;
  boost::asio::awaitable<boost::system::result<core::Embedding, core::EmbedFailure>> embed(
      std::vector<std::string> texts, core::EmbedKind kind) override;

  // Asks every service now (for `leuria embed`).
  boost::asio::awaitable<std::vector<ServiceReport>> discover();
  // The model pages get given these reports and the choice: the visitor's model when its
  // service lists it, else the first embedding model found.
  std::optional<core::EmbedModel> pick(const std::vector<ServiceReport>& reports) const;

 private:
  // Waits (at most wait_at_most) for reports_ to be fresh, starting a discovery if none runs.
  boost::asio::awaitable<void> refresh(std::chrono::milliseconds wait_at_most);
  boost::asio::awaitable<void> run_discovery();
  boost::asio::awaitable<ServiceReport> ask_ollama(core::ProviderDef p);
  boost::asio::awaitable<ServiceReport> ask_lmstudio(core::ProviderDef p);
  void forget() {
    fresh_until_ = {};
    ++generation_;
  }

  boost::asio::any_io_executor ex_;
  std::chrono::milliseconds cache_for_;
  std::vector<core::ProviderDef> providers_;
  core::EmbedChoice choice_;
  std::vector<ServiceReport> reports_;
  std::chrono::steady_clock::time_point fresh_until_{};
  bool discovering_ = false;
  std::uint64_t discoveries_ = 0;  // ended discoveries
  std::uint64_t generation_ = 0;   // settings changes and failures: older discoveries aren't fresh
  std::vector<std::shared_ptr<boost::asio::steady_timer>> waiting_;  // askers during a discovery
  std::map<std::string, bool> ollama_embeds_;  // digest → embeds (what /api/show said)
};

}  // namespace leuria::embed
