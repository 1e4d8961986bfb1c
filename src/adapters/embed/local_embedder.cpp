#include "adapters/embed/local_embedder.hpp"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <boost/asio/as_tuple.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/url/parse.hpp>

#include "adapters/embed/codec.hpp"
#include "core/ascii.hpp"
#include "http/client.hpp"

namespace leuria::embed {

namespace asio = boost::asio;
using core::EmbedFailure;

namespace {

// Listings are small and local: a service that doesn't answer quickly is treated as absent.
constexpr std::chrono::seconds kListConnect{2};
constexpr std::chrono::seconds kListRead{3};
// Embedding answers are whole JSON documents; 256 texts of a 4,096-dimension model is ~25 MB.
constexpr std::size_t kMaxAnswer = 64 * 1024 * 1024;

std::string root_of(const core::ProviderDef& p) {
  std::string root = p.base_url;
  while (!root.empty() && root.back() == '/') root.pop_back();
  if (root.ends_with("/v1")) root.resize(root.size() - 3);
  return root;
}

bool names_embedding(const std::string& name) { return core::ascii_lower(name).find("embed") != std::string::npos; }

std::string display(const core::ProviderDef& p) { return p.name.empty() ? p.id : p.name; }

http::ClientRequest listing_request(std::string method, std::string url, std::string body = {}) {
  http::ClientRequest req;
  req.method = std::move(method);
  req.url = std::move(url);
  req.body = std::move(body);
  if (!req.body.empty()) req.headers.push_back({"Content-Type", "application/json"});
  req.connect_timeout = kListConnect;
  req.read_timeout = kListRead;
  return req;
}

// A whole answer (http::fetch_whole, up to kMaxAnswer). A 2xx answer that broke off or grew past that
// has no answer to use: status 0, as for a server that was not reached.
using Whole = http::WholeResult;

// Every argument of a co_await is a named value: GCC 12 may destroy temporaries there twice.
asio::awaitable<Whole> fetch_whole(asio::any_io_executor ex, http::ClientRequest req) {
  auto out = co_await http::fetch_whole(ex, std::move(req), kMaxAnswer);
  if (out.status / 100 == 2 && (out.too_large || !out.complete)) out.status = 0;
  co_return out;
}

// Why a request of fetch_whole's with status 0 got no answer, as a clause.
std::string no_answer(const Whole& r) {
  if (r.too_large) return "the answer is larger than 64 MB";
  if (r.failure == http::Failure::broke_off) return "the answer broke off (" + r.error + ")";
  return r.error;
}

std::string unreachable(const Whole& r) {
  if (r.status == 0 && (r.too_large || r.failure == http::Failure::broke_off)) return "reached, but " + no_answer(r);
  if (r.status == 0) return "not reachable (" + r.error + ")";
  return "answered HTTP " + std::to_string(r.status) + " (" + error_message(r.body) + ")";
}

}  // namespace

bool is_loopback_url(const std::string& url) {
  auto u = boost::urls::parse_uri(url);
  if (!u || (u->scheme() != "http" && u->scheme() != "https")) return false;
  switch (u->host_type()) {
    case boost::urls::host_type::ipv4:
      return u->host_ipv4_address().to_bytes()[0] == 127;
    case boost::urls::host_type::ipv6:
      return u->host_ipv6_address().is_loopback() || (u->host_ipv6_address().is_v4_mapped() &&
                                                      u->host_ipv6_address().to_bytes()[12] == 127);
    case boost::urls::host_type::name:
      return core::ascii_iequals(u->encoded_host(), "localhost");
    default:
      return false;
  }
}

LocalEmbedder::LocalEmbedder(asio::any_io_executor ex, std::chrono::milliseconds cache_for)
    : ex_(std::move(ex)), cache_for_(cache_for) {}

void LocalEmbedder::set_providers(const std::vector<core::ProviderDef>& providers) {
  providers_.clear();
  for (const auto& p : providers)
    if ((p.kind == "ollama" || p.kind == "lmstudio") && is_loopback_url(p.base_url)) providers_.push_back(p);
  forget();
}

void LocalEmbedder::set_choice(core::EmbedChoice choice) {
  choice_ = std::move(choice);
  forget();
}

asio::awaitable<ServiceReport> LocalEmbedder::ask_ollama(core::ProviderDef p) {
  ServiceReport r{p};
  const std::string root = root_of(p);
  auto tags_req = listing_request("GET", root + "/api/tags");
  auto tags = co_await fetch_whole(ex_, tags_req);
  if (tags.status / 100 != 2) {
    r.error = unreachable(tags);
    co_return r;
  }
  r.reachable = true;
  for (auto& tag : parse_ollama_tags(tags.body)) {
    r.models.push_back(tag.name);
    auto known = ollama_embeds_.end();
    if (!tag.digest.empty()) known = ollama_embeds_.find(tag.digest);
    bool embeds = false;
    if (known != ollama_embeds_.end()) {
      embeds = known->second;
    } else {
      auto show_req = listing_request("POST", root + "/api/show", ollama_show_body(tag.name));
      auto show = co_await fetch_whole(ex_, show_req);
      std::optional<std::vector<std::string>> caps;
      if (show.status / 100 == 2) caps = parse_ollama_capabilities(show.body);
      if (caps) {
        embeds = std::find(caps->begin(), caps->end(), "embedding") != caps->end();
      } else {
        // Ollama before 0.6 says nothing of capabilities: BERT-family weights and names that
        // say so are embedding models.
        embeds = names_embedding(tag.name);
        for (auto& f : tag.families)
          if (core::ascii_lower(f).find("bert") != std::string::npos) embeds = true;
      }
      // Only a definite answer is kept: a failed /api/show is asked again next time.
      if (show.status / 100 == 2 && !tag.digest.empty()) ollama_embeds_[tag.digest] = embeds;
    }
    if (embeds) r.embedders.push_back(tag.name);
  }
  co_return r;
}

asio::awaitable<ServiceReport> LocalEmbedder::ask_lmstudio(core::ProviderDef p) {
  ServiceReport r{p};
  const std::string root = root_of(p);
  auto v0_req = listing_request("GET", root + "/api/v0/models");
  auto v0 = co_await fetch_whole(ex_, v0_req);
  if (v0.status == 0) {
    r.error = unreachable(v0);
    co_return r;
  }
  std::optional<std::vector<LmStudioModel>> models;
  if (v0.status / 100 == 2) models = parse_lmstudio_models(v0.body);
  if (models) {
    r.reachable = true;
    // Loaded models first: they answer without a load.
    std::stable_partition(models->begin(), models->end(), [](const LmStudioModel& m) { return m.loaded; });
    for (auto& m : *models) {
      r.models.push_back(m.id);
      if (m.type == "embeddings") r.embedders.push_back(m.id);
    }
    co_return r;
  }
  // An LM Studio without the /api/v0 listing (404, or 200 with an error): the OpenAI-style one,
  // by name.
  auto v1_req = listing_request("GET", root + "/v1/models");
  auto v1 = co_await fetch_whole(ex_, v1_req);
  if (v1.status / 100 != 2) {
    r.error = unreachable(v1);
    co_return r;
  }
  r.reachable = true;
  for (auto& id : parse_model_ids(v1.body)) {
    r.models.push_back(id);
    if (names_embedding(id)) r.embedders.push_back(id);
  }
  co_return r;
}

asio::awaitable<std::vector<ServiceReport>> LocalEmbedder::discover() {
  std::vector<ServiceReport> out;
  const auto providers = providers_;  // a reload during the discovery doesn't disturb it
  for (const auto& p : providers) {
    ServiceReport report;
    if (p.kind == "ollama") report = co_await ask_ollama(p);
    else report = co_await ask_lmstudio(p);
    out.push_back(std::move(report));
  }
  co_return out;
}

asio::awaitable<void> LocalEmbedder::refresh(std::chrono::milliseconds wait_at_most) {
  // Registered before the discovery starts: co_spawn may run it to its end at once (no
  // services to ask), and its end wakes every waiter.
  auto timer = std::make_shared<asio::steady_timer>(ex_);
  if (wait_at_most == std::chrono::milliseconds::max()) timer->expires_at(asio::steady_timer::time_point::max());
  else timer->expires_after(wait_at_most);
  waiting_.push_back(timer);
  // One discovery at a time, on its own: an asker that stops waiting (a /health with its
  // deadline, a closed connection) doesn't stop it, and the next asker finds its answer.
  const auto before = discoveries_;
  if (!discovering_) {
    discovering_ = true;
    asio::co_spawn(ex_, run_discovery(), asio::detached);
  }
  if (discoveries_ != before) co_return;
  co_await timer->async_wait(asio::as_tuple(asio::use_awaitable));
}

asio::awaitable<void> LocalEmbedder::run_discovery() {
  const auto generation = generation_;
  std::vector<ServiceReport> reports;
  try {
    reports = co_await discover();
  } catch (const std::exception& e) {
    spdlog::error("event=embed.discovery_failed error=\"{}\"", e.what());
  }
  discovering_ = false;
  reports_ = std::move(reports);
  ++discoveries_;
  // Settings changed meanwhile: answer those waiting, but look again for the next asker.
  if (generation == generation_) fresh_until_ = std::chrono::steady_clock::now() + cache_for_;
  for (auto& t : waiting_) t->cancel();
  waiting_.clear();
  for (const auto& r : reports_)
    spdlog::debug("event=embed.discovered provider={} reachable={} models={} embedders={}", r.provider.id,
                  r.reachable, r.models.size(), r.embedders.size());
}

std::optional<core::EmbedModel> LocalEmbedder::pick(const std::vector<ServiceReport>& reports) const {
  if (choice_.mode == core::EmbedChoice::Mode::off) return std::nullopt;
  if (choice_.mode == core::EmbedChoice::Mode::chosen) {
    // The visitor's model is used whenever its service lists it, even if it doesn't look like
    // an embedding model to us: the visitor knows better.
    for (const auto& r : reports)
      if (r.provider.id == choice_.provider &&
          std::find(r.models.begin(), r.models.end(), choice_.model) != r.models.end())
        return core::EmbedModel{r.provider.id, display(r.provider), choice_.model};
  }
  for (const auto& r : reports)
    if (!r.embedders.empty()) return core::EmbedModel{r.provider.id, display(r.provider), r.embedders.front()};
  return std::nullopt;
}

asio::awaitable<std::optional<core::EmbedModel>> LocalEmbedder::current(std::chrono::milliseconds wait_at_most) {
  if (choice_.mode == core::EmbedChoice::Mode::off) co_return std::nullopt;
  if (std::chrono::steady_clock::now() >= fresh_until_) {
    const auto before = discoveries_;
    co_await refresh(wait_at_most);
    // No discovery ended within the wait: the services are slow to list; say nothing rather than guess.
    if (discoveries_ == before) co_return std::nullopt;
  }
  co_return pick(reports_);
}

asio::awaitable<boost::system::result<core::Embedding, EmbedFailure>> LocalEmbedder::embed(
    std::vector<std::string> texts, core::EmbedKind kind) {
  using Result = boost::system::result<core::Embedding, EmbedFailure>;
  if (choice_.mode == core::EmbedChoice::Mode::off)
    co_return Result{EmbedFailure{EmbedFailure::Kind::no_embedder, "Embeddings are turned off on this computer."}};
  auto chosen = co_await current(std::chrono::milliseconds::max());
  if (!chosen)
    co_return Result{EmbedFailure{EmbedFailure::Kind::no_embedder,
                                  "No local embedding model is available (LM Studio or Ollama)."}};
  core::Embedding out;
  out.model = chosen->model;
  if (texts.empty()) co_return Result{std::move(out)};

  // A copy: a reload of providers.json may replace providers_ while the call is under way.
  std::optional<core::ProviderDef> provider;
  for (const auto& p : providers_)
    if (p.id == chosen->provider) provider = p;
  if (!provider)  // the providers were reloaded during the discovery
    co_return Result{EmbedFailure{EmbedFailure::Kind::no_embedder, "The embedding model's service was removed."}};
  const bool ollama = provider->kind == "ollama";
  const std::string root = root_of(*provider);
  const std::string name = display(*provider);

  std::vector<std::string> inputs;
  inputs.reserve(texts.size());
  for (auto& t : texts) inputs.push_back(core::embed_input(t, kind, chosen->model));
  texts.clear();

  http::ClientRequest req;
  req.method = "POST";
  req.url = root + (ollama ? "/api/embed" : "/v1/embeddings");
  req.headers = {{"Content-Type", "application/json"}};
  // No ?: between class temporaries in a coroutine: GCC 12 destroys them twice.
  if (ollama) req.body = ollama_embed_body(chosen->model, inputs);
  else req.body = openai_embed_body(chosen->model, inputs);
  // Embedding can take a while on a CPU (and LM Studio may load the model first).
  req.read_timeout = std::chrono::seconds(300);
  auto res = co_await fetch_whole(ex_, req);

  auto failed = [&](std::string why) {
    forget();  // the service changed under us: look again next time
    spdlog::warn("event=embed.failed provider={} model={} error=\"{}\"", provider->id, chosen->model, why);
    return Result{EmbedFailure{EmbedFailure::Kind::service_failed, name + " failed to embed: " + why}};
  };
  if (res.status == 0) co_return failed(no_answer(res));
  if (res.status / 100 != 2)
    co_return failed("HTTP " + std::to_string(res.status) + " (" + error_message(res.body) + ")");
  boost::system::result<Vectors, std::string> vectors = std::string();
  if (ollama) vectors = parse_ollama_embeddings(res.body);
  else vectors = parse_openai_embeddings(res.body);
  if (!vectors) co_return failed(vectors.error());
  if (vectors->size() != inputs.size())
    co_return failed("it sent " + std::to_string(vectors->size()) + " vectors for " + std::to_string(inputs.size()) +
                     " texts");
  out.vectors = std::move(*vectors);
  co_return Result{std::move(out)};
}

}  // namespace leuria::embed
