#include "json/write.hpp"

#include <algorithm>
#include <boost/json/serializer.hpp>

namespace leuria::jsonio {

void append_string(std::string& out, std::string_view text) {
  // Most strings (ids, names, a token's text) need no escape: copied whole. Boost's serializer costs
  // several hundred instructions even for those.
  const bool plain = std::none_of(text.begin(), text.end(), [](char ch) {
    const auto c = static_cast<unsigned char>(ch);
    return c < 0x20 || c == '"' || c == '\\';
  });
  if (plain) {
    out.reserve(out.size() + text.size() + 2);
    out += '"';
    out += text;
    out += '"';
    return;
  }
  boost::json::serializer sr;
  sr.reset(text);
  std::size_t at = out.size();
  while (!sr.done()) {
    out.resize(std::max(out.capacity(), at + text.size() + 16));
    at += sr.read(out.data() + at, out.size() - at).size();
  }
  out.resize(at);
}

}  // namespace leuria::jsonio
