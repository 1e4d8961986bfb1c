#pragma once
// Writing JSON text by hand, for messages built as text on hot paths (a token's event, a page's
// call) where a boost::json tree, its serialization and the growth of the message around it cost
// more than the message itself.
#include <string>
#include <string_view>

namespace leuria::jsonio {

// Appends `text` as a JSON string (quoted, escaped as boost::json escapes: control characters,
// quote and backslash), straight into `out`.
void append_string(std::string& out, std::string_view text);

}  // namespace leuria::jsonio
