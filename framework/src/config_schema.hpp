#pragma once
// The configuration schema: one entry per key (path, type and bounds,
// default, one-line doc, environment alias) that drives reading,
// validation, the report's echo, the FX_* aliases and the docs check.
// The parts of loading that are not one key each live beside it:
// config_inject.cpp (failure specs, FX_INJECT), config_checks.cpp (checks
// between keys, writable paths, the job size), config_sources.cpp (file,
// environment, --fx-set), config_app.cpp (the app: section, fx::ConfigSection).
#include <functional>
#include <string>
#include <vector>

#include "config_walker.hpp"

namespace fx::detail {

struct ConfigKey {
  std::string path;          // dotted, e.g. "recovery.timeout_s"
  std::string type;          // as docs/config.md writes it: "int >= 1", "`a` \| `b`", "bool", "path"
  std::string default_text;  // as docs/config.md writes it: "30", "`sleep`", "(none)"
  std::string doc;           // one line
  std::string env;           // a named FX_* alias, or ""
  // Reads and validates one value (`shown`: the key as the user wrote it).
  std::function<void(Walker&, const YAML::Node&, const std::string& shown, Config&)> read;
  // The effective value for the report; Undefined to leave it out.
  std::function<YAML::Node(const Config&)> echo;
};

// Every key, in the order of docs/config.md and of the report's echo.
const std::vector<ConfigKey>& config_schema();
const ConfigKey* find_key(const std::string& path);
// The keys allowed in the map at `path` ("" for the top level).
std::vector<std::string> section_keys(const std::string& path);

// The whole tree into `cfg`: schema keys, the injection specs, the app
// section; with w.cross_checks(), the checks between keys.
void read_tree(Walker& w, const YAML::Node& root, Config& cfg);

// config_sources.cpp. A YAML file's top-level map (`origin`: where its
// name came from, for a file that cannot be read). Throws ConfigError.
YAML::Node load_yaml_file(const std::string& file, const std::string& origin);
// The answer to --fx-print-launch (app.cpp): the
// settings the launcher applies, one "key value" line each, loaded from
// every source without MPI. Returns the exit code (0, or 2 after printing
// the ConfigError).
int print_launch(int argc, char** argv);
// The arguments left to the app (fx's flags taken out) that read like a
// setting, "section.key=value" with one of the configuration's sections
// ("app.x=1" without --fx-set: silently unused, a batch of runs was lost).
std::vector<std::string> setting_like_arguments(int argc, char** argv);

// config_inject.cpp
void read_failures(Walker& w, const YAML::Node& failures, InjectConfig& inj);
void check_chaos(Walker& w, const YAML::Node& chaos, const InjectConfig& inj);
bool parse_action(const std::string& text, InjectAction& out);
YAML::Node parse_inject_env(const std::string& text);

// config_checks.cpp
// The memory level commits in the step loop (a fixed or an auto interval).
bool memory_on(const Config& cfg);
void cross_check(Walker& w, const YAML::Node& root, const Config& cfg);
void check_paths(const Config& cfg, const std::vector<std::string>& env);

}  // namespace fx::detail
