// Embeddings for pages: the limits, the prefix each model family's card asks for, and the
// Embedder interface that adapters/embed implements with a local model (LM Studio, Ollama).
// The core never learns how a model is found or spoken to.
#pragma once
#include <boost/asio/awaitable.hpp>
#include <boost/system/result.hpp>
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace leuria::core {

constexpr std::size_t kMaxEmbedTexts = 256;
constexpr std::size_t kMaxEmbedChars = 8000;  // Unicode code points per text

enum class EmbedKind { query, document };

// What a family's model card asks to put before a query and before a document ("" for nothing).
struct EmbedPrefixes {
  std::string_view query;
  std::string_view document;
};
// Looked up by the model's name as its service lists it (any case, any publisher prefix).
EmbedPrefixes embed_prefixes(std::string_view model);

// The first `max` code points of UTF-8 text; never splits a character.
std::string cut_code_points(std::string_view text, std::size_t max);

// The text the model gets: cut to kMaxEmbedChars, then the family's prefix unless it is there.
std::string embed_input(std::string_view text, EmbedKind kind, std::string_view model);

// The visitor's choice in config.json "embed".
struct EmbedChoice {
  enum class Mode { automatic, off, chosen } mode = Mode::automatic;
  std::string provider;  // chosen
  std::string model;     // chosen
};

// A model that embeds, on a local service.
struct EmbedModel {
  std::string provider;       // provider id, e.g. "ollama"
  std::string provider_name;  // "Ollama"
  std::string model;          // as the service lists it
};

struct Embedding {
  std::string model;
  std::vector<std::vector<double>> vectors;
};

struct EmbedFailure {
  enum class Kind { no_embedder, service_failed } kind;
  std::string message;  // a plain sentence for logs and developers
};

class Embedder {
 public:
  virtual ~Embedder() = default;
  // The model a page's request would use now, if any. Finding out may ask local services; after
  // wait_at_most without an answer, nullopt (GET /health must answer quickly).
  virtual boost::asio::awaitable<std::optional<EmbedModel>> current(std::chrono::milliseconds wait_at_most) = 0;
  // One vector per text, in order. Texts arrive as the page sent them; the embedder applies
  // embed_input with the model it picks.
  virtual boost::asio::awaitable<boost::system::result<Embedding, EmbedFailure>> embed(std::vector<std::string> texts,
                                                                                      EmbedKind kind) = 0;
};

}  // namespace leuria::core
