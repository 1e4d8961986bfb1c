// A site's declared needs: a closed vocabulary (tools, images, effort, context). Guidance for the
// visitor's choice of AI; never a permission. Codecs turn wire values into this and drop the rest.
#pragma once
#include <cstdint>
#include <optional>
#include <string_view>

namespace leuria::core {

enum class Effort { light, standard, deep };

struct Needs {
  bool tools = false;
  bool images = false;
  std::optional<Effort> effort;
  std::optional<std::uint32_t> context;  // tokens

  bool empty() const { return !tools && !images && !effort && !context; }
  bool operator==(const Needs&) const = default;
};

std::optional<Effort> parse_effort(std::string_view word);
std::string_view effort_word(Effort e);

// The largest context a site may declare; larger values are dropped as malformed.
inline constexpr std::uint32_t kMaxContextTokens = 100'000'000;

}  // namespace leuria::core
