#include "app/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>

namespace leuria::app {

void setup_logging(bool verbose) {
  auto logger = spdlog::stderr_logger_st("leuria");
  logger->set_pattern("%Y-%m-%dT%H:%M:%S.%e%z %l %v");
  logger->set_level(verbose ? spdlog::level::debug : spdlog::level::info);
  logger->flush_on(spdlog::level::debug);
  spdlog::set_default_logger(logger);
}

}  // namespace leuria::app
