// leuria: the engine's entry point. Parses the command line and runs the chosen command.
#include <malloc.h>

#include <csignal>
#include <variant>

#include "app/ai_commands.hpp"
#include "app/embed_command.hpp"
#include "app/engine.hpp"
#include "app/mcp_stdio.hpp"
#include "app/options.hpp"
#include "app/sites_command.hpp"

int main(int argc, char** argv) {
  std::signal(SIGPIPE, SIG_IGN);
  // Started with SIGCHLD ignored (a launcher's choice, inherited through exec), the kernel would reap
  // agents by itself: their exit codes would be lost, and the stop's check for child processes blind.
  std::signal(SIGCHLD, SIG_DFL);
  // A fixed threshold for serving an allocation from mmap (glibc's default, 128 KB). Left dynamic,
  // glibc raises it to the size of each large block freed: a turn's text, which grows by doubling,
  // soon moves every allocation under a few MB to the heap, where the blocks freed as concurrent turns
  // grow stay resident (bench scenario 9: 1-2.7 MB per stalled stream beyond its text, 294 KB fixed;
  // 24 MB per finished 10 MB turn, 14 MB fixed). Setting it also fixes the trim threshold (128 KB).
  mallopt(M_MMAP_THRESHOLD, 128 * 1024);
  auto parsed = leuria::app::parse_command_line(argc, argv);
  if (auto* code = std::get_if<int>(&parsed)) return *code;
  auto& command = std::get<leuria::app::Command>(parsed);
  namespace a = leuria::app;
  return std::visit(
      [](auto& c) -> int {
        using T = std::decay_t<decltype(c)>;
        if constexpr (std::is_same_v<T, a::StartOptions>) return a::run_engine(c);
        else if constexpr (std::is_same_v<T, a::SitesList>) return a::sites_list();
        else if constexpr (std::is_same_v<T, a::SitesRevoke>) return a::sites_revoke(c.origin);
        else if constexpr (std::is_same_v<T, a::SitesUse>) return a::sites_use(c);
        else if constexpr (std::is_same_v<T, a::AgentsList>) return a::agents_list();
        else if constexpr (std::is_same_v<T, a::AgentsAdd>) return a::agents_add(c);
        else if constexpr (std::is_same_v<T, a::AgentsRemove>) return a::agents_remove(c);
        else if constexpr (std::is_same_v<T, a::AgentsUse>) return a::agents_use(c);
        else if constexpr (std::is_same_v<T, a::ProvidersList>) return a::providers_list();
        else if constexpr (std::is_same_v<T, a::ProvidersAdd>) return a::providers_add(c);
        else if constexpr (std::is_same_v<T, a::McpStdio>) return a::mcp_stdio(c.url);
        else if constexpr (std::is_same_v<T, a::EmbedShow>) return a::embed_show();
        else if constexpr (std::is_same_v<T, a::EmbedSet>) return a::embed_set(c.choice);
        else return a::providers_remove(c);
      },
      command);
}
