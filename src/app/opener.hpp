// Opens a URL in the visitor's browser (xdg-open), without waiting for the browser.
#pragma once
#include <string>

namespace leuria::app {

// Best effort: the URL is always printed too, so a machine without a browser loses nothing.
void open_in_browser(const std::string& url);

}  // namespace leuria::app
