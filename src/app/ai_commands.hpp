// `leuria agents …`, `leuria providers …` and `leuria sites use …`: the visitor's AI settings.
#pragma once
#include "app/options.hpp"

namespace leuria::app {

int agents_list();
int agents_add(const AgentsAdd& a);
int agents_remove(const AgentsRemove& a);
// Saves the default AI in config.json; a running engine watches the file, so no lock is taken.
int agents_use(const AgentsUse& a);
int providers_list();
int providers_add(const ProvidersAdd& p);
int providers_remove(const ProvidersRemove& p);
int sites_use(const SitesUse& u);
// --agent and `agents use`: checks the id and saves it (and the model, if any) as the default.
// The error is a plain sentence.
boost::system::result<void, std::string> set_default_agent(const std::string& id,
                                                           const std::optional<std::string>& model = std::nullopt);

}  // namespace leuria::app
