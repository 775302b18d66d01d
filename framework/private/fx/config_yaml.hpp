#pragma once
// The YAML side of the configuration, for fx's own code and tests (never
// installed: yaml-cpp is a private dependency of fx).
#include <fx/config.hpp>
#include <yaml-cpp/yaml.h>

#include <map>
#include <string>

namespace fx::detail {

// A section over `node` (a map; Undefined or null: empty). `source` is the
// file its marks refer to ("" when none), `path` its dotted key, and
// `overrides` the keys set by the environment or --fx-set with their
// position ("env FX_CFG_APP__NX", "--fx-set"); only keys at or below `path`
// matter. Throws ConfigError when `node` is set but not a map.
ConfigSection make_section(const YAML::Node& node, const std::string& source, const std::string& path = "app",
                           const std::map<std::string, std::string>& overrides = {});
// The node behind a section (shared, not a copy: it keeps its marks).
const YAML::Node& section_node(const ConfigSection& section);

// The effective configuration as YAML (the report's `config:` echo).
YAML::Node config_to_yaml(const Config& config);

}  // namespace fx::detail
