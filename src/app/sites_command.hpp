// `leuria sites` and `leuria sites revoke <origin>`: read and edit grants.json directly; a
// running engine sees the change through its watch on the file.
#pragma once
#include <string>

namespace leuria::app {

int sites_list();
int sites_revoke(const std::string& origin);

}  // namespace leuria::app
