// The reference reading of a model server's streamed chunk: the tree-building version that
// llm::parse_stream_line used before it read chunks with jsonio::scan (one allocation per value,
// most of a token's cost). Kept as the oracle the faster reader must agree with, line for line:
// tests/unit/chunk_scan_test.cpp and the fuzz target fuzz/targets/model_chunk.cpp.
#pragma once
#include <boost/json.hpp>

#include "adapters/llm/codec.hpp"
#include "json/read.hpp"

namespace leuria::oracle {

inline std::string reference_text_of(const boost::json::value* v) {
  return v && v->is_string() ? std::string(v->as_string()) : std::string();
}

inline llm::Line reference_parse_stream_line(std::string_view line) {
  using llm::Delta;
  llm::Line out;
  if (!line.starts_with("data:")) return out;
  line.remove_prefix(5);
  while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
  if (line == "[DONE]") {
    out.done = true;
    return out;
  }
  auto v = jsonio::read_object(line);
  if (!v) return out;
  Delta d;
  const auto& o = *v;
  // "error": null (or another value that is no message) is no error: some servers send it in every chunk.
  if (auto* err = o.if_contains("error"); err && (err->is_object() || err->is_string())) {
    d.error = err->is_object() ? reference_text_of(err->as_object().if_contains("message")) : reference_text_of(err);
    if (d.error->empty()) d.error = "The model server reported an error";
    out.delta = std::move(d);
    return out;
  }
  auto* choices = o.if_contains("choices");
  if (!choices || !choices->is_array() || choices->as_array().empty()) {
    out.delta = std::move(d);
    return out;
  }
  const auto& choice = choices->as_array()[0];
  if (!choice.is_object()) return out;
  if (auto* fr = choice.as_object().if_contains("finish_reason"); fr && fr->is_string())
    d.finish_reason = std::string(fr->as_string());
  auto* delta = choice.as_object().if_contains("delta");
  if (delta && delta->is_object()) {
    const auto& dd = delta->as_object();
    d.content = reference_text_of(dd.if_contains("content"));
    d.reasoning = reference_text_of(dd.if_contains("reasoning_content"));
    if (d.reasoning.empty()) d.reasoning = reference_text_of(dd.if_contains("reasoning"));
    if (auto* tcs = dd.if_contains("tool_calls"); tcs && tcs->is_array()) {
      for (auto& tc : tcs->as_array()) {
        if (!tc.is_object()) continue;
        const auto& t = tc.as_object();
        Delta::ToolCallPart part;
        if (auto* i = t.if_contains("index")) {
          if (!i->is_int64() || i->as_int64() < 0 || i->as_int64() >= llm::kMaxToolCalls) continue;
          part.index = static_cast<int>(i->as_int64());
        }
        if (auto* id = t.if_contains("id"); id && id->is_string()) part.id = std::string(id->as_string());
        if (auto* f = t.if_contains("function"); f && f->is_object()) {
          if (auto* n = f->as_object().if_contains("name"); n && n->is_string()) part.name = std::string(n->as_string());
          part.arguments = reference_text_of(f->as_object().if_contains("arguments"));
        }
        d.tool_calls.push_back(std::move(part));
      }
    }
  }
  out.delta = std::move(d);
  return out;
}

// The two readings as one comparable text (empty when they agree on everything).
inline std::string describe(const llm::Line& l) {
  std::string s = l.done ? "done;" : "";
  if (!l.delta) return s + "no delta";
  const auto& d = *l.delta;
  s += "content=" + d.content + ";reasoning=" + d.reasoning + ";finish=" + d.finish_reason.value_or("<none>") +
       ";error=" + d.error.value_or("<none>");
  for (auto& p : d.tool_calls)
    s += ";call[" + std::to_string(p.index) + "," + p.id.value_or("<none>") + "," + p.name.value_or("<none>") + "," +
         p.arguments + "]";
  return s;
}

}  // namespace leuria::oracle
