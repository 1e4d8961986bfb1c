#include "core/embeddings.hpp"

#include <array>

#include "core/ascii.hpp"

namespace leuria::core {

namespace {

// `word` as a whole token of the name: bounded by the ends or by a separator, so "e5" matches
// "multilingual-e5-large" and "intfloat/e5-base" but not "gte5x".
bool has_token(std::string_view name, std::string_view word) {
  auto separator = [](char c) { return c == '-' || c == '_' || c == '/' || c == ':' || c == '.' || c == ' '; };
  for (auto pos = name.find(word); pos != std::string_view::npos; pos = name.find(word, pos + 1)) {
    const bool left = pos == 0 || separator(name[pos - 1]);
    const auto end = pos + word.size();
    const bool right = end == name.size() || separator(name[end]);
    if (left && right) return true;
  }
  return false;
}

constexpr std::string_view kRetrievalQuery = "Represent this sentence for searching relevant passages: ";

struct Family {
  std::string_view needle;
  bool token;  // match as a whole token rather than a substring
  EmbedPrefixes prefixes;
};

// The one table of model-card prefixes. First match wins, so the exceptions come first.
//   nomic-embed-text: "search_query: " / "search_document: "
//   e5 (intfloat): "query: " / "passage: "
//   bge-m3 needs no instruction; other bge (English v1.5): the retrieval instruction for queries
//   mxbai-embed-large and snowflake-arctic-embed: the same retrieval instruction for queries
constexpr std::array kFamilies{
    Family{"nomic-embed", false, {"search_query: ", "search_document: "}},
    Family{"bge-m3", false, {"", ""}},
    Family{"bge", true, {kRetrievalQuery, ""}},
    Family{"mxbai-embed", false, {kRetrievalQuery, ""}},
    Family{"arctic-embed", false, {kRetrievalQuery, ""}},
    Family{"e5", true, {"query: ", "passage: "}},
};

}  // namespace

EmbedPrefixes embed_prefixes(std::string_view model) {
  const std::string name = ascii_lower(model);
  for (const auto& f : kFamilies)
    if (f.token ? has_token(name, f.needle) : name.find(f.needle) != std::string::npos) return f.prefixes;
  // bge names also come as "bge-large-en-v1.5" (token) or "bge_small" (token): covered above.
  return {"", ""};
}

std::string cut_code_points(std::string_view text, std::size_t max) {
  std::size_t count = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    // Count lead bytes only; continuation bytes (10xxxxxx) belong to the character before.
    if ((static_cast<unsigned char>(text[i]) & 0xC0) == 0x80) continue;
    if (count == max) return std::string(text.substr(0, i));
    ++count;
  }
  return std::string(text);
}

std::string embed_input(std::string_view text, EmbedKind kind, std::string_view model) {
  std::string cut = cut_code_points(text, kMaxEmbedChars);
  const auto p = embed_prefixes(model);
  const std::string_view prefix = kind == EmbedKind::query ? p.query : p.document;
  if (prefix.empty() || std::string_view(cut).starts_with(prefix)) return cut;
  return std::string(prefix) + cut;
}

}  // namespace leuria::core
