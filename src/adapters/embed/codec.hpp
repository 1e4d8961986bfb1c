// The embed door's codec: the only file that knows the field names of the local services'
// listings and embedding calls (Ollama's native API; LM Studio's /api/v0 and OpenAI-style
// /v1/embeddings). Bodies in, plain structs out.
#pragma once
#include <boost/system/result.hpp>
#include <optional>
#include <string>
#include <vector>

namespace leuria::embed {

using Vectors = std::vector<std::vector<double>>;

// ---- Ollama
struct OllamaTag {
  std::string name;    // "nomic-embed-text:latest"
  std::string digest;  // identifies the weights: what /api/show says about it never changes
  std::vector<std::string> families;  // details.family and details.families
};
// GET /api/tags. Empty when the body isn't a listing.
std::vector<OllamaTag> parse_ollama_tags(const std::string& body);
std::string ollama_show_body(const std::string& model);
// POST /api/show: the model's capabilities ("completion", "embedding", …); nullopt when the
// answer has none (Ollama before 0.6).
std::optional<std::vector<std::string>> parse_ollama_capabilities(const std::string& body);
std::string ollama_embed_body(const std::string& model, const std::vector<std::string>& inputs);
// POST /api/embed: {embeddings: [[…], …]}.
boost::system::result<Vectors, std::string> parse_ollama_embeddings(const std::string& body);

// ---- LM Studio
struct LmStudioModel {
  std::string id;
  std::string type;  // "llm", "vlm", "embeddings"
  bool loaded = false;
};
// GET /api/v0/models; nullopt when the answer isn't a listing (an LM Studio before 0.3.6 answers
// routes it doesn't have with 200 {"error": "Unexpected endpoint or method…"}).
std::optional<std::vector<LmStudioModel>> parse_lmstudio_models(const std::string& body);
// GET /v1/models (OpenAI-style): the ids.
std::vector<std::string> parse_model_ids(const std::string& body);
std::string openai_embed_body(const std::string& model, const std::vector<std::string>& inputs);
// POST /v1/embeddings: {data: [{index, embedding}]}, put in index order.
boost::system::result<Vectors, std::string> parse_openai_embeddings(const std::string& body);

// A readable message from an error answer ({"error":"…"} or {"error":{"message":"…"}}), else
// the start of the body.
std::string error_message(const std::string& body);

}  // namespace leuria::embed
