#include "adapters/embed/codec.hpp"

#include <boost/json.hpp>

#include "json/read.hpp"

namespace leuria::embed {

namespace json = boost::json;

namespace {

std::optional<json::value> parse(const std::string& body) {
  auto v = jsonio::read(body);
  if (!v) return std::nullopt;
  return std::move(*v);
}

const json::array* array_at(const json::value& v, std::string_view key) {
  if (!v.is_object()) return nullptr;
  auto* a = v.as_object().if_contains(key);
  return a && a->is_array() ? &a->as_array() : nullptr;
}

std::string string_at(const json::object& o, std::string_view key) {
  auto* v = o.if_contains(key);
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

// One vector: an array of numbers, not empty.
boost::system::result<std::vector<double>, std::string> vector_of(const json::value& v) {
  if (!v.is_array() || v.as_array().empty()) return std::string("an embedding is not a list of numbers");
  std::vector<double> out;
  out.reserve(v.as_array().size());
  for (auto& x : v.as_array()) {
    if (!x.is_number()) return std::string("an embedding is not a list of numbers");
    out.push_back(x.to_number<double>());
  }
  return out;
}

json::array strings(const std::vector<std::string>& v) {
  json::array a;
  a.reserve(v.size());
  for (auto& s : v) a.emplace_back(s);
  return a;
}

}  // namespace

std::vector<OllamaTag> parse_ollama_tags(const std::string& body) {
  std::vector<OllamaTag> out;
  auto v = parse(body);
  const json::array* models = v ? array_at(*v, "models") : nullptr;
  if (!models) return out;
  for (auto& m : *models) {
    if (!m.is_object()) continue;
    const auto& o = m.as_object();
    OllamaTag t;
    t.name = string_at(o, "name");
    if (t.name.empty()) t.name = string_at(o, "model");
    if (t.name.empty()) continue;
    t.digest = string_at(o, "digest");
    if (auto* d = o.if_contains("details"); d && d->is_object()) {
      if (auto f = string_at(d->as_object(), "family"); !f.empty()) t.families.push_back(f);
      if (auto* fs = array_at(*d, "families"))
        for (auto& f : *fs)
          if (f.is_string()) t.families.emplace_back(f.as_string());
    }
    out.push_back(std::move(t));
  }
  return out;
}

std::string ollama_show_body(const std::string& model) { return json::serialize(json::object{{"model", model}}); }

std::optional<std::vector<std::string>> parse_ollama_capabilities(const std::string& body) {
  auto v = parse(body);
  const json::array* caps = v ? array_at(*v, "capabilities") : nullptr;
  if (!caps) return std::nullopt;
  std::vector<std::string> out;
  for (auto& c : *caps)
    if (c.is_string()) out.emplace_back(c.as_string());
  return out;
}

std::string ollama_embed_body(const std::string& model, const std::vector<std::string>& inputs) {
  return json::serialize(json::object{{"model", model}, {"input", strings(inputs)}});
}

boost::system::result<Vectors, std::string> parse_ollama_embeddings(const std::string& body) {
  auto v = parse(body);
  const json::array* list = v ? array_at(*v, "embeddings") : nullptr;
  if (!list) return std::string("the answer has no embeddings");
  Vectors out;
  out.reserve(list->size());
  for (auto& e : *list) {
    auto vec = vector_of(e);
    if (!vec) return vec.error();
    out.push_back(std::move(*vec));
  }
  return out;
}

std::optional<std::vector<LmStudioModel>> parse_lmstudio_models(const std::string& body) {
  std::vector<LmStudioModel> out;
  auto v = parse(body);
  const json::array* data = v ? array_at(*v, "data") : nullptr;
  if (!data) return std::nullopt;
  for (auto& m : *data) {
    if (!m.is_object()) continue;
    const auto& o = m.as_object();
    LmStudioModel lm{string_at(o, "id"), string_at(o, "type"), string_at(o, "state") == "loaded"};
    if (!lm.id.empty()) out.push_back(std::move(lm));
  }
  return out;
}

std::vector<std::string> parse_model_ids(const std::string& body) {
  std::vector<std::string> out;
  auto v = parse(body);
  const json::array* data = v ? array_at(*v, "data") : nullptr;
  if (!data) return out;
  for (auto& m : *data)
    if (m.is_object())
      if (auto id = string_at(m.as_object(), "id"); !id.empty()) out.push_back(std::move(id));
  return out;
}

std::string openai_embed_body(const std::string& model, const std::vector<std::string>& inputs) {
  return json::serialize(json::object{{"model", model}, {"input", strings(inputs)}});
}

boost::system::result<Vectors, std::string> parse_openai_embeddings(const std::string& body) {
  auto v = parse(body);
  const json::array* data = v ? array_at(*v, "data") : nullptr;
  if (!data) return std::string("the answer has no embeddings");
  Vectors out(data->size());
  std::vector<bool> seen(data->size(), false);
  for (std::size_t i = 0; i < data->size(); ++i) {
    const auto& item = (*data)[i];
    if (!item.is_object()) return std::string("an embedding entry is not an object");
    const auto& o = item.as_object();
    // index is optional in practice; without it, the list's own order.
    std::size_t at = i;
    if (auto* idx = o.if_contains("index")) {
      if (!idx->is_int64() && !idx->is_uint64()) return std::string("an embedding has a bad index");
      // An index past 2^63 arrives as uint64; it is out of range either way, without a throw.
      const std::int64_t n = idx->is_int64() ? idx->get_int64() : -1;
      if (n < 0 || static_cast<std::size_t>(n) >= out.size()) return std::string("an embedding has a bad index");
      at = static_cast<std::size_t>(n);
    }
    if (seen[at]) return std::string("two embeddings have the same index");
    auto* e = o.if_contains("embedding");
    if (!e) return std::string("an embedding entry has no embedding");
    auto vec = vector_of(*e);
    if (!vec) return vec.error();
    out[at] = std::move(*vec);
    seen[at] = true;
  }
  return out;
}

std::string error_message(const std::string& body) {
  if (auto v = parse(body); v && v->is_object()) {
    if (auto* e = v->as_object().if_contains("error")) {
      if (e->is_string()) return std::string(e->as_string());
      if (e->is_object())
        if (auto m = string_at(e->as_object(), "message"); !m.empty()) return m;
    }
  }
  return body.substr(0, 200);
}

}  // namespace leuria::embed
