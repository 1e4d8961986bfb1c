// Structured logs for developers on stderr: "time level event=… key=value …".
#pragma once

namespace leuria::app {

void setup_logging(bool verbose);

}  // namespace leuria::app
