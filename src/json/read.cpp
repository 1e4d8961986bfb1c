#include "json/read.hpp"
#include "json/scan.hpp"

#include "core/plain_text.hpp"

#include <boost/json/basic_parser_impl.hpp>
#include <boost/json/value_stack.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace leuria::jsonio {
namespace json = boost::json;
using boost::system::error_code;

namespace {

// Builds the value like boost::json::parser does, and counts the members the text wrote. Boost's
// value_stack keeps the last of two equal keys, so a tree with fewer members than the text had
// means a key was repeated. The fast path pays one counter; naming the key is left to a second,
// rarer pass (Namer below).
struct Builder {
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  // The stack of values being built starts in this buffer: most texts (a model's chunk, a page's
  // request) never allocate for it.
  unsigned char temp[1024];
  json::value_stack st;
  std::size_t members = 0;

  Builder() : st(json::storage_ptr(), temp, sizeof temp) { st.reset(); }
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t n, error_code&) { st.push_array(n); return true; }
  bool on_object_begin(error_code&) { return true; }
  bool on_object_end(std::size_t n, error_code&) {
    members += n;
    st.push_object(n);
    return true;
  }
  bool on_string_part(json::string_view s, std::size_t, error_code&) { st.push_chars(s); return true; }
  bool on_string(json::string_view s, std::size_t, error_code&) { st.push_string(s); return true; }
  bool on_key_part(json::string_view s, std::size_t, error_code&) { st.push_chars(s); return true; }
  bool on_key(json::string_view s, std::size_t, error_code&) { st.push_key(s); return true; }
  bool on_number_part(json::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t i, json::string_view, error_code&) { st.push_int64(i); return true; }
  bool on_uint64(std::uint64_t u, json::string_view, error_code&) { st.push_uint64(u); return true; }
  // Boost reads 1e400 as infinity and writes it back as `Infinity`, which no JSON reader takes: a
  // value kept and written again (grants.json's unknown fields, a page's schema sent to the AI)
  // would turn the whole text unreadable. Such a number is refused here.
  bool on_double(double d, json::string_view, error_code& ec) {
    if (!std::isfinite(d)) {
      ec = json::error::exponent_overflow;
      return false;
    }
    st.push_double(d);
    return true;
  }
  bool on_bool(bool b, error_code&) { st.push_bool(b); return true; }
  bool on_null(error_code&) { st.push_null(); return true; }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }
};

// Only when a key was repeated: finds which, to say so. Keeps the keys of every open object.
struct Namer {
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);

  std::vector<std::vector<std::string>> open;
  std::string part;
  std::string repeated;

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return true; }
  bool on_array_end(std::size_t, error_code&) { return true; }
  bool on_object_begin(error_code&) { open.emplace_back(); return true; }
  bool on_object_end(std::size_t, error_code&) { open.pop_back(); return true; }
  bool on_string_part(json::string_view, std::size_t, error_code&) { return true; }
  bool on_string(json::string_view, std::size_t, error_code&) { return true; }
  bool on_key_part(json::string_view s, std::size_t, error_code&) { part.append(s.data(), s.size()); return true; }
  bool on_key(json::string_view s, std::size_t, error_code& ec) {
    part.append(s.data(), s.size());
    auto& keys = open.back();
    if (std::find(keys.begin(), keys.end(), part) != keys.end()) {
      repeated = std::move(part);
      ec = json::error::syntax;  // stops the parse; the caller reads `repeated`
      return false;
    }
    keys.push_back(std::move(part));
    part.clear();
    return true;
  }
  bool on_number_part(json::string_view, error_code&) { return true; }
  bool on_int64(std::int64_t, json::string_view, error_code&) { return true; }
  bool on_uint64(std::uint64_t, json::string_view, error_code&) { return true; }
  bool on_double(double, json::string_view, error_code&) { return true; }
  bool on_bool(bool, error_code&) { return true; }
  bool on_null(error_code&) { return true; }
  bool on_comment_part(json::string_view, error_code&) { return true; }
  bool on_comment(json::string_view, error_code&) { return true; }
};

// Object members in the built tree, without recursion (the tree may be max_depth deep).
std::size_t count_members(const json::value& root) {
  std::size_t n = 0;
  std::vector<const json::value*> todo{&root};
  while (!todo.empty()) {
    const json::value* v = todo.back();
    todo.pop_back();
    if (const auto* o = v->if_object()) {
      n += o->size();
      for (const auto& kv : *o) todo.push_back(&kv.value());
    } else if (const auto* a = v->if_array()) {
      for (const auto& e : *a) todo.push_back(&e);
    }
  }
  return n;
}

std::string repeated_key(std::string_view text) {
  json::basic_parser<Namer> p(detail::parse_options());
  error_code ec;
  p.write_some(false, text.data(), text.size(), ec);
  return p.handler().repeated;
}

}  // namespace

json::parse_options detail::parse_options() {
  json::parse_options o;
  o.max_depth = max_depth;
  return o;
}

ReadError detail::repeated_key_refusal(std::string_view key) {
  return ReadError{"the key \"" + std::string(key.substr(0, 100)) + "\" appears twice in one object"};
}

std::optional<ReadError> detail::refusal(std::string_view text, error_code ec, std::size_t used, bool done) {
  // write_some stops after one value; anything but whitespace after it is a second value.
  if (!ec && text.substr(used).find_first_not_of(" \t\r\n") != std::string_view::npos) ec = json::error::extra_data;
  if (!ec && done) return std::nullopt;
  if (ec == json::error::too_deep) return ReadError{"it nests deeper than " + std::to_string(max_depth) + " levels"};
  if (ec == json::error::exponent_overflow) return ReadError{"it has a number too large for JSON"};
  if (!core::is_utf8(text)) return ReadError{"it is not valid UTF-8"};
  if (text.find_first_not_of(" \t\r\n") == std::string_view::npos) return ReadError{"it is empty"};
  return ReadError{"it is not valid JSON (" + ec.message() + " near byte " + std::to_string(used) + ")"};
}

boost::system::result<json::value, ReadError> read(std::string_view text) {
  json::basic_parser<Builder> p(detail::parse_options());
  error_code ec;
  const std::size_t used = p.write_some(false, text.data(), text.size(), ec);
  if (auto refused = detail::refusal(text, ec, used, p.done())) return *refused;
  json::value v = p.handler().st.release();
  if (p.handler().members != 0 && count_members(v) != p.handler().members)
    return detail::repeated_key_refusal(repeated_key(text));
  return v;
}

bool valid(std::string_view text) {
  KeepNothing nothing;
  return scan(text, nothing).has_value();
}

namespace {
// Skippers over a text the scan already took: no checks, every string closed, brackets matched.
std::size_t skip_space(std::string_view s, std::size_t i) {
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n')) ++i;
  return i;
}
std::size_t skip_string(std::string_view s, std::size_t i) {  // at the opening quote
  for (;;) {
    const char* q = static_cast<const char*>(std::memchr(s.data() + i + 1, '"', s.size() - i - 1));
    i = static_cast<std::size_t>(q - s.data());
    std::size_t slashes = 0;  // a quote after an odd run of backslashes is escaped
    while (s[i - 1 - slashes] == '\\') ++slashes;
    if (slashes % 2 == 0) return i + 1;
  }
}
std::size_t skip_value(std::string_view s, std::size_t i) {
  if (s[i] == '"') return skip_string(s, i);
  if (s[i] == '{' || s[i] == '[') {
    std::size_t depth = 0;
    while (true) {
      const char c = s[i];
      if (c == '"') {
        i = skip_string(s, i);
        continue;
      }
      if (c == '{' || c == '[') ++depth;
      else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
      ++i;
    }
  }
  while (i < s.size() && s[i] != ',' && s[i] != '}' && s[i] != ']' && s[i] != ' ' && s[i] != '\t' &&
         s[i] != '\r' && s[i] != '\n')
    ++i;
  return i;
}
}  // namespace

std::optional<std::string_view> member_text(std::string_view s, std::string_view key) {
  std::size_t i = skip_space(s, 0);
  if (i >= s.size() || s[i] != '{') return std::nullopt;
  i = skip_space(s, i + 1);
  while (i < s.size() && s[i] == '"') {
    const std::size_t key_end = skip_string(s, i);
    const std::string_view k = s.substr(i + 1, key_end - i - 2);
    if (k.find('\\') != std::string_view::npos) return std::nullopt;
    const std::size_t start = skip_space(s, skip_space(s, key_end) + 1);  // past the ':'
    const std::size_t end = skip_value(s, start);
    if (k == key) return s.substr(start, end - start);
    i = skip_space(s, end);
    if (i < s.size() && s[i] == ',') i = skip_space(s, i + 1);
  }
  return std::nullopt;
}

boost::system::result<json::object, ReadError> read_object(std::string_view text) {
  auto v = read(text);
  if (!v) return v.error();
  if (!v->is_object()) return ReadError{"it is not a JSON object"};
  return std::move(v->as_object());
}

}  // namespace leuria::jsonio
