// The application's section (fx::ConfigSection): typed lookups and key
// checks with fx's error format.
#include <fx/config_section.hpp>
#include <fx/config_yaml.hpp>
#include <fx/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <utility>

#include "config_schema.hpp"

namespace fx {
namespace detail {

struct SectionData {
  YAML::Node node;     // a map (an empty one when the section is absent)
  std::string path;    // "app", "app.grid"
  std::string source;  // the file the node's marks refer to, "" when none
  // Keys set by the environment or --fx-set, with their position.
  std::shared_ptr<const std::map<std::string, std::string>> overrides;
};

struct SectionAccess {
  static ConfigSection make(std::shared_ptr<const SectionData> data) {
    return ConfigSection(std::move(data));
  }
  static const SectionData& data(const ConfigSection& s) { return s.data(); }
};

}  // namespace detail

using detail::join_key;
using detail::node_text;
using detail::parent_key;
using detail::SectionAccess;
using detail::SectionData;

namespace {

std::string app_position(const YAML::Node& node, const std::string& origin) {
  // Nodes set with --fx-set carry marks of their own little string: no file.
  if (origin.rfind("--fx-set", 0) == 0 || origin.rfind("env ", 0) == 0) return origin;
  return detail::mark_position(origin.empty() ? "<config>" : origin, node);
}

[[noreturn]] void app_fail(const YAML::Node& v, const std::string& key, const std::string& expected,
                           const std::string& origin) {
  FX_THROW(ConfigError, app_position(v, origin), key,
           fmt::format("expected {}, got '{}'", expected, node_text(v)));
}

// Where `full` was set: the override that set it or a map above it (an
// override names itself), else the file.
std::string origin_of(const SectionData& d, const std::string& full) {
  for (std::string p = full; !p.empty(); p = parent_key(p)) {
    const auto it = d.overrides->find(p);
    if (it != d.overrides->end()) return it->second;
  }
  return d.source;
}

YAML::Node value(const SectionData& d, const std::string& key) {
  return d.node.IsMap() ? d.node[key] : YAML::Node(YAML::NodeType::Undefined);
}

std::string key_name(const YAML::Node& k) { return k.IsScalar() ? k.Scalar() : node_text(k); }

// "<where>: app.key: expected <expected>, got '<value>'" for `v`, the value of `key`.
[[noreturn]] void fail(const SectionData& d, const YAML::Node& v, const std::string& key,
                       const std::string& expected) {
  const std::string full = join_key(d.path, key);
  app_fail(v, full, expected, origin_of(d, full));
}

}  // namespace

const SectionData& ConfigSection::data() const {
  static const SectionData empty{YAML::Node(YAML::NodeType::Map), "app", "",
                                 std::make_shared<const std::map<std::string, std::string>>()};
  return data_ ? *data_ : empty;
}

ConfigSection::ConfigSection(std::shared_ptr<const detail::SectionData> d) : data_(std::move(d)) {}

std::string ConfigSection::get_value(const std::string& key, const std::string& fallback) const {
  const YAML::Node v = value(data(), key);
  if (!v.IsDefined()) return fallback;
  if (!v.IsScalar()) fail(data(), v, key, "a string");
  return v.Scalar();
}

bool ConfigSection::get_value(const std::string& key, bool fallback) const {
  const YAML::Node v = value(data(), key);
  if (!v.IsDefined()) return fallback;
  bool b = false;
  if (!v.IsScalar() || !detail::parse_bool(v.Scalar(), b)) fail(data(), v, key, "true or false");
  return b;
}

double ConfigSection::get_value(const std::string& key, double fallback) const {
  const YAML::Node v = value(data(), key);
  if (!v.IsDefined()) return fallback;
  double d = 0;
  if (!v.IsScalar() || !detail::parse_number(v.Scalar(), d)) fail(data(), v, key, "a number");
  return d;
}

long long ConfigSection::get_int(const std::string& key, long long fallback, long long min,
                                 long long max) const {
  const YAML::Node v = value(data(), key);
  if (!v.IsDefined()) return fallback;
  long long x = 0;
  const std::string range = fmt::format("an integer from {} to {}", min, max);
  // Digits beyond 64 bits are a value out of range too, not "no integer".
  if (!v.IsScalar() || !detail::parse_int(v.Scalar(), x))
    fail(data(), v, key, v.IsScalar() && detail::is_digits(v.Scalar()) ? range : "an integer");
  if (x < min || x > max) fail(data(), v, key, range);
  return x;
}

unsigned long long ConfigSection::get_uint(const std::string& key, unsigned long long fallback,
                                           unsigned long long max) const {
  static_assert(sizeof(std::uint64_t) == sizeof(unsigned long long));
  const YAML::Node v = value(data(), key);
  if (!v.IsDefined()) return fallback;
  std::uint64_t u = 0;
  const std::string range = fmt::format("an integer from 0 to {}", max);
  if (!v.IsScalar() || !detail::parse_uint(v.Scalar(), u))
    fail(data(), v, key, v.IsScalar() && detail::is_digits(v.Scalar()) ? range : "an integer >= 0");
  if (u > max) fail(data(), v, key, range);
  return u;
}

bool ConfigSection::has(const std::string& key) const { return value(data(), key).IsDefined(); }

std::vector<std::string> ConfigSection::keys() const {
  std::vector<std::string> out;
  if (data().node.IsMap())
    for (const auto& kv : data().node) out.push_back(key_name(kv.first));
  return out;
}

ConfigSection ConfigSection::section(const std::string& key) const {
  const YAML::Node v = value(data(), key);
  auto sub = std::make_shared<SectionData>(data());
  sub->path = join_key(data().path, key);
  if (v.IsDefined() && !v.IsNull() && !v.IsMap()) fail(data(), v, key, "a map");
  // reset, not =: assigning a Node would rebind the node it shares with the tree.
  sub->node.reset(v.IsDefined() && !v.IsNull() ? v : YAML::Node(YAML::NodeType::Map));
  return ConfigSection(std::move(sub));
}

void ConfigSection::check_keys(const std::vector<std::string>& known) const {
  if (!data().node.IsMap()) return;
  for (const auto& kv : data().node) {
    const std::string name = key_name(kv.first);
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const std::string full = join_key(data().path, name);
    FX_THROW(ConfigError, app_position(kv.first, origin_of(data(), full)), full,
             fmt::format("expected one of {}{}, got '{}'", detail::join(known),
                         detail::suggestion(name, known), name));
  }
}

void ConfigSection::reject(const std::string& key, const std::string& expected) const {
  const YAML::Node v = value(data(), key);
  fail(data(), v.IsDefined() ? v : data().node, key, expected);
}

const std::string& ConfigSection::path() const { return data().path; }

std::string ConfigSection::position(const std::string& key) const {
  const YAML::Node v = value(data(), key);
  return app_position(v.IsDefined() ? v : data().node, origin_of(data(), join_key(data().path, key)));
}

ConfigSection load_app_section(const std::string& file, const std::string& origin) {
  const YAML::Node app = detail::Walker::child(detail::load_yaml_file(file, origin), "app");
  if (app.IsDefined() && !app.IsNull() && !app.IsMap())
    app_fail(app, "app", "a map (the application's settings)", file);
  return detail::make_section(app, file);
}

namespace detail {

ConfigSection make_section(const YAML::Node& node, const std::string& source, const std::string& path,
                           const std::map<std::string, std::string>& overrides) {
  auto data = std::make_shared<SectionData>();
  data->path = path;
  data->source = source;
  // Only the overrides of this section, of a map above it or below it.
  auto mine = std::make_shared<std::map<std::string, std::string>>();
  for (const auto& [key, position] : overrides) {
    const bool above = path.rfind(key + ".", 0) == 0, below = key.rfind(path + ".", 0) == 0;
    if (key == path || above || below) mine->emplace(key, position);
  }
  data->overrides = std::move(mine);
  if (node.IsDefined() && !node.IsNull() && !node.IsMap())
    app_fail(node, path, "a map", origin_of(*data, path));
  // Shared, not cloned: a clone would lose the marks errors need.
  data->node.reset(node.IsDefined() && !node.IsNull() ? node : YAML::Node(YAML::NodeType::Map));
  return SectionAccess::make(std::move(data));
}

const YAML::Node& section_node(const ConfigSection& section) { return SectionAccess::data(section).node; }

}  // namespace detail
}  // namespace fx
