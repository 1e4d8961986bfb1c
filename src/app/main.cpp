// leuria: the engine's entry point. Parses the command line and runs the chosen command.
#include <csignal>
#include <variant>

#include "app/engine.hpp"
#include "app/options.hpp"
#include "app/sites_command.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  auto parsed = leuria::app::parse_command_line(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  auto& command = std::get<leuria::app::Command>(parsed);
  if (auto* start = std::get_if<leuria::app::StartOptions>(&command)) return leuria::app::run_engine(*start);
  if (std::holds_alternative<leuria::app::SitesList>(command)) return leuria::app::sites_list();
  return leuria::app::sites_revoke(std::get<leuria::app::SitesRevoke>(command).origin);
}
