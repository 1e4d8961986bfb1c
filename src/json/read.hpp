#pragma once
// The one way the engine reads JSON text, whoever sent it: a page, a script, an agent, a model
// server or a file under LEURIA_HOME. One policy everywhere, so no two doors disagree about what a
// text means (an object with two "token" keys read as the first by one parser and the last by
// another is how smuggling starts):
//   - nesting deeper than max_depth levels is refused (Boost.JSON's stack is bounded, but our own
//     code walks values recursively too);
//   - a key repeated in one object is refused, never "last one wins";
//   - the text must be valid UTF-8 (Boost.JSON's default, kept), with no comments or trailing commas;
//   - numbers as Boost.JSON reads them (int64, uint64, else double).
// Errors are values with a sentence a person can read ("the key \"id\" appears twice in one object").
#include <boost/json/value.hpp>
#include <boost/system/result.hpp>
#include <cstddef>
#include <string>
#include <string_view>

namespace leuria::jsonio {

inline constexpr std::size_t max_depth = 64;

struct ReadError {
  std::string message;  // lower-case clause, e.g. "it nests deeper than 64 levels"
};

boost::system::result<boost::json::value, ReadError> read(std::string_view text);

// read(), then insists on an object: the shape of every message and file the engine accepts.
boost::system::result<boost::json::object, ReadError> read_object(std::string_view text);

// Whether read() would take `text`, found without building its tree (scan.hpp, keeping nothing):
// for a text that is passed on as it is when it is JSON.
bool valid(std::string_view text);

}  // namespace leuria::jsonio
