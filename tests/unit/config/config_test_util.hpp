#pragma once
// Helpers for the configuration tests: a scratch directory, and loading a
// YAML text with environment entries and --fx-set overrides.
#include <fx/config.hpp>
#include <fx/error.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

namespace fx::test {

// A fresh directory under $TMPDIR, removed at exit.
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fx-config-test.XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string file(const std::string& name, const std::string& text) const {
    const std::string p = path_ + "/" + name;
    std::ofstream(p) << text;
    return p;
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// The message of the ConfigError a load throws, or "" when it loads.
inline std::string load_error(const std::string& file, const std::vector<std::string>& env = {},
                              const std::vector<std::string>& sets = {}, int world_size = 0) {
  try {
    const Config c = load_config(file, env, sets);
    if (world_size > 0) validate_against_world(c, world_size);
    return "";
  } catch (const ConfigError& e) {
    return e.what();
  }
}

}  // namespace fx::test
