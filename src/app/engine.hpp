// The wiring: builds the engine's object graph for `leuria start` and runs it on one io thread.
#pragma once
#include "app/options.hpp"

namespace leuria::app {

// Returns the process exit code.
int run_engine(const StartOptions& options);

}  // namespace leuria::app
