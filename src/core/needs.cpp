#include "core/needs.hpp"

namespace leuria::core {

std::optional<Effort> parse_effort(std::string_view w) {
  if (w == "light") return Effort::light;
  if (w == "standard") return Effort::standard;
  if (w == "deep") return Effort::deep;
  return std::nullopt;
}

std::string_view effort_word(Effort e) {
  switch (e) {
    case Effort::light: return "light";
    case Effort::standard: return "standard";
    case Effort::deep: return "deep";
  }
  return "standard";
}

}  // namespace leuria::core
