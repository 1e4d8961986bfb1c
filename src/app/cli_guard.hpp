// One-shot CLI commands: an exception becomes one sentence on stderr and exit status 1.
#pragma once
#include <exception>
#include <iostream>

namespace leuria::app {

template <class F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    std::cerr << "leuria: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace leuria::app
