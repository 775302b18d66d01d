// The application's section: typed lookups and key checks with fx's error
// format.
#include <fx/config.hpp>
#include <fx/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>

#include "config_walker.hpp"

namespace fx {

using detail::join_key;
using detail::node_text;
using detail::parent_key;

// ---- typed lookup for applications --------------------------------------

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

template <class T>
T convert(const YAML::Node& v, const std::string& key, const std::string& origin) {
  if constexpr (std::is_same_v<T, std::string>) {
    if (!v.IsScalar()) app_fail(v, key, "a string", origin);
    return v.Scalar();
  } else if constexpr (std::is_same_v<T, bool>) {
    bool b = false;
    if (!v.IsScalar() || !detail::parse_bool(v.Scalar(), b)) app_fail(v, key, "true or false", origin);
    return b;
  } else if constexpr (std::is_same_v<T, double>) {
    double d = 0;
    if (!v.IsScalar() || !detail::parse_number(v.Scalar(), d)) app_fail(v, key, "a number", origin);
    return d;
  } else if constexpr (std::is_same_v<T, std::uint64_t>) {
    std::uint64_t u = 0;
    if (!v.IsScalar() || !detail::parse_uint(v.Scalar(), u)) app_fail(v, key, "an integer >= 0", origin);
    return u;
  } else {
    long long x = 0;
    if (!v.IsScalar() || !detail::parse_int(v.Scalar(), x) || x < std::numeric_limits<T>::min() ||
        x > std::numeric_limits<T>::max())
      app_fail(v, key, "an integer", origin);
    return static_cast<T>(x);
  }
}

}  // namespace

template <class T>
T config_get(const YAML::Node& section, const std::string& key, const T& fallback, const std::string& origin,
             const std::string& prefix) {
  const std::string full = join_key(prefix, key);
  if (section.IsDefined() && !section.IsNull() && !section.IsMap())
    app_fail(section, prefix.empty() ? "document" : prefix, "a map", origin);
  const YAML::Node v = section.IsMap() ? section[key] : YAML::Node(YAML::NodeType::Undefined);
  if (!v.IsDefined()) return fallback;
  return convert<T>(v, full, origin);
}

template <class T>
T config_get(const YAML::Node& section, const std::string& key, const T& fallback, const Config& config,
             const std::string& prefix) {
  const std::string full = join_key(prefix, key);
  // An override (--fx-set app.nx=.., FX_CFG_APP__NX) names itself; else the file.
  for (std::string p = full; !p.empty(); p = parent_key(p)) {
    const auto it = config.origins.find(p);
    const std::string& pos = it == config.origins.end() ? std::string() : it->second.position;
    if (pos.rfind("--fx-set", 0) == 0 || pos.rfind("env ", 0) == 0)
      return config_get<T>(section, key, fallback, it->second.position, prefix);
  }
  return config_get<T>(section, key, fallback, config.source, prefix);
}

#define FX_CONFIG_GET(T)                                                                        \
  template T config_get<T>(const YAML::Node&, const std::string&, const T&, const std::string&, \
                           const std::string&);                                                 \
  template T config_get<T>(const YAML::Node&, const std::string&, const T&, const Config&,      \
                           const std::string&);
FX_CONFIG_GET(bool)
FX_CONFIG_GET(int)
FX_CONFIG_GET(std::int64_t)
FX_CONFIG_GET(std::uint64_t)
FX_CONFIG_GET(double)
FX_CONFIG_GET(std::string)
#undef FX_CONFIG_GET

void config_check_keys(const YAML::Node& section, const std::vector<std::string>& known,
                       const std::string& origin, const std::string& prefix) {
  if (!section.IsDefined() || section.IsNull()) return;
  if (!section.IsMap()) app_fail(section, prefix, "a map", origin);
  for (const auto& kv : section) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : node_text(kv.first);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      FX_THROW(ConfigError, app_position(kv.first, origin), join_key(prefix, name),
               fmt::format("expected one of {}{}, got '{}'", detail::join(known),
                           detail::suggestion(name, known), name));
    }
  }
}

void config_check_keys(const Config& config, const std::vector<std::string>& known) {
  const YAML::Node& app = config.app;
  if (!app.IsDefined() || !app.IsMap()) return;
  for (const auto& kv : app) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : node_text(kv.first);
    if (std::find(known.begin(), known.end(), name) != known.end()) continue;
    const auto it = config.origins.find(join_key("app", name));
    const std::string origin = it != config.origins.end() ? it->second.position : config.source;
    FX_THROW(ConfigError, app_position(kv.first, origin), join_key("app", name),
             fmt::format("expected one of {}{}, got '{}'", detail::join(known),
                         detail::suggestion(name, known), name));
  }
}

void config_reject(const YAML::Node& section, const std::string& key, const std::string& expected,
                   const std::string& origin, const std::string& prefix) {
  const YAML::Node v = section.IsMap() ? section[key] : YAML::Node(YAML::NodeType::Undefined);
  app_fail(v.IsDefined() ? v : section, join_key(prefix, key), expected, origin);
}

}  // namespace fx
