#include "json/write.hpp"

#include <algorithm>
#include <boost/json/serializer.hpp>

namespace leuria::jsonio {

void append_string(std::string& out, std::string_view text) {
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
