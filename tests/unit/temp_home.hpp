// A fresh LEURIA_HOME-like folder per test, removed afterwards.
#pragma once
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include <unistd.h>

struct TempHome {
  std::filesystem::path dir;
  TempHome() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "leuria-unit-XXXXXX").string();
    dir = ::mkdtemp(tmpl.data());
  }
  ~TempHome() { std::filesystem::remove_all(dir); }
  std::string read(const std::string& name) const {
    std::ifstream f(dir / name);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  void write(const std::string& name, const std::string& text) const { std::ofstream(dir / name) << text; }
};
