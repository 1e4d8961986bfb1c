// LEURIA_HOME (default ~/.leuria): the folder of config.json, grants.json, providers.json and engine.lock.
#pragma once
#include <boost/system/result.hpp>
#include <filesystem>
#include <string>

namespace leuria::store {

// The folder named by LEURIA_HOME, else $HOME/.leuria.
std::filesystem::path home_dir();

// Creates the folder if needed and makes it 0700. The error says in plain words what failed.
boost::system::result<void, std::string> ensure_home(const std::filesystem::path& dir);

}  // namespace leuria::store
