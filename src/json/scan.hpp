#pragma once
// jsonio::scan: the policy of jsonio::read (read.hpp) without building a tree, for hot paths that
// want a few fields of a text and drop the rest: a model server's streamed chunk is read this way,
// once per token. Building the tree (every key, string and object of the chunk, then walking it
// again for repeated keys) was most of what a streamed token cost the engine.
//
// The same texts are refused, with the same sentences: nesting deeper than max_depth, a key
// repeated in one object, invalid UTF-8, a number too large for JSON, anything after the value.
// The visitor sees the structure as it is read, with the path to each value (Path), and asks for
// the strings it wants: the others are not copied.
//
//   struct V {
//     void begin(const jsonio::Path&, bool is_array);
//     void end(const jsonio::Path&, bool is_array, std::size_t size);
//     bool wants_string(const jsonio::Path&);         // a string starts here: keep it?
//     void string(const jsonio::Path&, std::string);  // a kept string, whole
//     void integer(const jsonio::Path&, std::int64_t);
//     void other(const jsonio::Path&);                // any other scalar (uint64 beyond int64, double, bool, null)
//     void kept_at(const char*);                       // optional: called before string(), see on_string
//     void integer_text(std::string_view);             // optional: called before integer(), see on_int64
//   };
//
// A visitor's calls may be made for a text that is then refused: it must not act before scan()
// returns success.
#include <boost/container/small_vector.hpp>
#include <boost/json/basic_parser_impl.hpp>
#include <boost/system/result.hpp>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>

#include "json/read.hpp"

namespace leuria::jsonio {

// Where the scanner is: the containers open around the current value, outermost first. At level
// i, key(i) is the member being read (objects) and index(i) the element (arrays).
class Path {
 public:
  std::size_t depth() const { return levels_.size(); }
  bool is_array(std::size_t i) const { return levels_[i].array; }
  std::size_t index(std::size_t i) const { return levels_[i].index; }
  std::string_view key(std::size_t i) const {
    const Level& l = levels_[i];
    return l.array ? std::string_view() : std::string_view(keys_.data() + l.key_off, l.key_len);
  }
  // Shorthands for a visitor: level i is object member `k` / array element `n`. Inlined, so that
  // comparing with a literal is a length test and a few loads, not a call to memcmp (a visitor
  // makes several of these per value, on every token).
  [[gnu::always_inline]] bool at(std::size_t i, std::string_view k) const {
    if (i >= depth()) return false;
    const Level& l = levels_[i];
    return !l.array && l.key_len == k.size() && std::memcmp(keys_.data() + l.key_off, k.data(), k.size()) == 0;
  }
  bool at(std::size_t i, std::size_t n) const { return i < depth() && is_array(i) && index(i) == n; }
  // The value is the top-level object's member `k`.
  [[gnu::always_inline]] bool top(std::string_view k) const { return depth() == 1 && at(0, k); }

 protected:
  struct Level {
    bool array = false;
    std::uint32_t index = 0;     // arrays: elements read so far
    std::uint32_t first_key = 0;  // objects: where this object's keys start in keys_
    std::uint32_t key_off = 0;   // objects: the current key
    std::uint32_t key_len = 0;
  };
  boost::container::small_vector<Level, 16> levels_;
  // The keys of every open object, each as [4-byte length][bytes]; the repeated-key check looks
  // back over the current object's keys (objects are small; this is what read() refuses too).
  boost::container::small_vector<char, 1024> keys_;
};

namespace detail {

template <class Visitor>
class ScanHandler : public Path {
 public:
  static constexpr std::size_t max_array_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_object_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_string_size = static_cast<std::size_t>(-1);
  static constexpr std::size_t max_key_size = static_cast<std::size_t>(-1);
  using error_code = boost::system::error_code;
  using string_view = boost::json::string_view;

  explicit ScanHandler(Visitor& v) : v_(v) {}
  bool repeated_found = false;
  std::string repeated;  // the first key repeated in one object

  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_array_begin(error_code&) { return open(true); }
  bool on_array_end(std::size_t n, error_code&) { return close(true, n); }
  bool on_object_begin(error_code&) { return open(false); }
  bool on_object_end(std::size_t n, error_code&) { return close(false, n); }
  bool on_string_part(string_view s, std::size_t, error_code&) {
    if (!in_string_) {
      in_string_ = true;
      keep_ = v_.wants_string(*this);
      first_ = s.data();
    }
    if (keep_) text_.append(s.data(), s.size());
    return true;
  }
  bool on_string(string_view s, std::size_t, error_code&) {
    if (!in_string_) {
      keep_ = v_.wants_string(*this);
      first_ = s.data();
    }
    if (keep_) {
      // A visitor may ask where the string begins (jsonio::StringSlot::learn): the parser's first
      // view of it lies in the text when the string does not begin with an escape (the parser hands
      // over the bytes before an escape as they lie, and what follows from a copy of its own).
      if constexpr (requires(Visitor& v, const char* at) { v.kept_at(at); }) v_.kept_at(first_);
      if (text_.empty())
        v_.string(*this, std::string(s.data(), s.size()));
      else
        v_.string(*this, std::move(text_.append(s.data(), s.size())));
    }
    text_.clear();
    in_string_ = keep_ = false;
    return value_done();
  }
  bool on_key_part(string_view s, std::size_t, error_code&) {
    if (!in_key_) start_key();
    append_key(s);
    return true;
  }
  bool on_key(string_view s, std::size_t, error_code&) {
    if (!in_key_) start_key();
    append_key(s);
    in_key_ = false;
    Level& l = levels_.back();
    const std::uint32_t off = key_start_ + 4;
    const std::uint32_t len = static_cast<std::uint32_t>(keys_.size()) - off;
    std::memcpy(keys_.data() + key_start_, &len, 4);
    const char* key = keys_.data() + off;
    for (std::uint32_t at = l.first_key; at < key_start_;) {
      std::uint32_t n;
      std::memcpy(&n, keys_.data() + at, 4);
      if (n == len && std::memcmp(keys_.data() + at + 4, key, len) == 0) {
        // Noted, and the parse goes on: a text that is also malformed further on is refused as
        // malformed, as read() says it.
        if (!repeated_found) repeated.assign(key, len);
        repeated_found = true;
        break;
      }
      at += 4 + n;
    }
    l.key_off = off;
    l.key_len = len;
    return true;
  }
  bool on_number_part(string_view, error_code&) {
    number_split_ = true;
    return true;
  }
  bool on_int64(std::int64_t i, string_view s, error_code&) {
    // A visitor may ask for the integer as it is written (jsonio::StringSlot::learn, a number it
    // ignores): the parser's view of it lies in the text unless the number came in parts.
    if constexpr (requires(Visitor& v, std::string_view t) { v.integer_text(t); })
      v_.integer_text(number_split_ ? std::string_view() : std::string_view(s.data(), s.size()));
    number_split_ = false;
    v_.integer(*this, i);
    return value_done();
  }
  bool on_uint64(std::uint64_t, string_view, error_code&) {
    number_split_ = false;
    return scalar();
  }
  bool on_double(double d, string_view, error_code& ec) {
    number_split_ = false;
    if (!std::isfinite(d)) {  // as read(): 1e400 would be written back as `Infinity`
      ec = boost::json::error::exponent_overflow;
      return false;
    }
    return scalar();
  }
  bool on_bool(bool, error_code&) { return scalar(); }
  bool on_null(error_code&) { return scalar(); }
  bool on_comment_part(string_view, error_code&) { return true; }
  bool on_comment(string_view, error_code&) { return true; }

 private:
  bool open(bool array) {
    v_.begin(*this, array);
    Level l;
    l.array = array;
    l.first_key = static_cast<std::uint32_t>(keys_.size());
    levels_.push_back(l);
    return true;
  }
  bool close(bool array, std::size_t n) {
    keys_.resize(levels_.back().first_key);  // this object's keys are done with
    levels_.pop_back();
    v_.end(*this, array, n);
    return value_done();
  }
  bool scalar() {
    v_.other(*this);
    return value_done();
  }
  // A value is complete: the enclosing array moves to its next element.
  bool value_done() {
    if (!levels_.empty() && levels_.back().array) ++levels_.back().index;
    return true;
  }
  void start_key() {
    in_key_ = true;
    key_start_ = static_cast<std::uint32_t>(keys_.size());
    keys_.resize(keys_.size() + 4, boost::container::default_init);  // the length, written at the key's end
  }
  void append_key(string_view s) {
    const std::size_t at = keys_.size();
    keys_.resize(at + s.size(), boost::container::default_init);
    if (!s.empty()) std::memcpy(keys_.data() + at, s.data(), s.size());
  }

  Visitor& v_;
  std::string text_;
  const char* first_ = nullptr;  // the first view of the string being read
  bool in_string_ = false;
  bool keep_ = false;
  bool in_key_ = false;
  bool number_split_ = false;  // the number being read came in parts (on_number_part)
  std::uint32_t key_start_ = 0;
};

// After the parser stopped at `used` with `ec`: the sentence when the text is refused (an error,
// an unfinished value, or anything but whitespace after the value), else nothing. Shared with read().
std::optional<ReadError> refusal(std::string_view text, boost::system::error_code ec, std::size_t used, bool done);
// read()'s parser options (its depth limit), and its sentence for a repeated key: scan() uses both.
boost::json::parse_options parse_options();
ReadError repeated_key_refusal(std::string_view key);

}  // namespace detail

// A visitor that keeps nothing: scan() then only says whether read() would take the text.
struct KeepNothing {
  void begin(const Path&, bool) {}
  void end(const Path&, bool, std::size_t) {}
  bool wants_string(const Path&) { return false; }
  void string(const Path&, std::string) {}
  void integer(const Path&, std::int64_t) {}
  void other(const Path&) {}
};

// In a text scan() took whose value is an object: the text of the value of its member `key`, as it
// was written (no whitespace around it), without reading it. Nothing when the object has no such
// member or one of its keys is written with escapes (the caller reads the text whole instead): a
// value is passed on as it came (a page's result) without a tree built and written again.
std::optional<std::string_view> member_text(std::string_view text, std::string_view key);

// Reads `text` under read()'s policy, telling `visitor` what it finds. Success means the text
// was one JSON value that read() would take.
template <class Visitor>
boost::system::result<void, ReadError> scan(std::string_view text, Visitor& visitor) {
  boost::json::basic_parser<detail::ScanHandler<Visitor>> p(detail::parse_options(), visitor);
  boost::system::error_code ec;
  const std::size_t used = p.write_some(false, text.data(), text.size(), ec);
  if (auto refused = detail::refusal(text, ec, used, p.done())) return *refused;
  if (p.handler().repeated_found)
    return detail::repeated_key_refusal(p.handler().repeated);
  return {};
}

}  // namespace leuria::jsonio
