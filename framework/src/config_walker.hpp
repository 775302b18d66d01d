#pragma once
// The walk over a merged configuration tree: typed reads with bounds, key
// checks, and errors naming file:line:column, `env NAME` or `--fx-set` for
// whichever source set the value. Shared by the schema (config_schema.cpp),
// the injection specs (config_inject.cpp) and the cross checks.
#include <fx/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "config_detail.hpp"

namespace fx::detail {

constexpr long long kIntMax = std::numeric_limits<int>::max();

inline std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
inline std::string parent_key(const std::string& path) {
  const auto cut = path.find_last_of(".[");
  return cut == std::string::npos ? "" : path.substr(0, cut);
}

// The node at a dotted path below `root` (Undefined when absent).
YAML::Node node_at(const YAML::Node& root, const std::string& path);

// The schema walk over the merged tree.
class Walker {
 public:
  Walker(std::string file, const std::map<std::string, std::string>& overridden, Config& cfg,
         bool cross_checks = true)
      : file_(std::move(file)), overridden_(overridden), cfg_(cfg), cross_checks_(cross_checks) {}
  // It keeps a reference: a temporary map would dangle (a fuzz finding).
  Walker(std::string file, std::map<std::string, std::string>&& overridden, Config& cfg,
         bool cross_checks = true) = delete;

  // Checks between keys; off when one source is validated on its own (a
  // later source may still change the other key).
  bool cross_checks() const { return cross_checks_; }
  // The file the marks refer to, and the keys the environment or --fx-set set.
  const std::string& file() const { return file_; }
  const std::map<std::string, std::string>& overridden() const { return overridden_; }

  // Overrides win over file marks: their nodes were parsed from a string.
  std::string where(const YAML::Node& node, const std::string& path) const {
    for (std::string p = path;; p = parent_key(p)) {
      const auto it = overridden_.find(p);
      if (it != overridden_.end()) return it->second;
      if (p.empty()) break;
    }
    return mark_position(file_.empty() ? "<config>" : file_, node);
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& expected) const {
    FX_THROW(ConfigError, where(node, path), path,
             fmt::format("expected {}, got '{}'", expected, node_text(node)));
  }

  void record(const YAML::Node& node, const std::string& path, const std::string& shown = "") {
    cfg_.origins[path] = ConfigOrigin{where(node, path), shown.empty() ? path : shown};
  }

  // A map with only `known` keys, each once. Null counts as an empty map.
  void check_keys(const YAML::Node& map, const std::string& path,
                  const std::vector<std::string>& known) const {
    if (map.IsNull()) return;
    if (!map.IsMap())
      fail(map, path.empty() ? "document" : path, fmt::format("a map with keys {}", join(known)));
    std::map<std::string, YAML::Node> seen;
    for (const auto& kv : map) {
      const YAML::Node& k = kv.first;
      const std::string name = k.IsScalar() ? k.Scalar() : node_text(k);
      const std::string key = join_key(path, name);
      if (!k.IsScalar()) fail(k, key, "a key name");
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        FX_THROW(ConfigError, where(k, key), key,
                 fmt::format("expected one of {}{}, got '{}'", join(known), suggestion(name, known), name));
      }
      const auto [it, fresh] = seen.emplace(name, k);
      if (!fresh) {
        const YAML::Mark first = it->second.Mark();
        FX_THROW(
            ConfigError, where(k, key), key,
            fmt::format("expected each key once, got '{}' again (first at line {})", name, first.line + 1));
      }
    }
  }

  static YAML::Node child(const YAML::Node& map, const std::string& key) {
    if (!map.IsMap()) return YAML::Node(YAML::NodeType::Undefined);
    return map[key];
  }

  std::string scalar(const YAML::Node& v, const std::string& path, const std::string& expected) const {
    if (!v.IsScalar()) fail(v, path, expected);
    return v.Scalar();
  }

  long long integer(const YAML::Node& v, const std::string& path, long long lo, long long hi,
                    const std::string& expected) const {
    long long x = 0;
    const bool is_int = v.IsScalar() && parse_int(v.Scalar(), x);
    if (is_int && x >= lo && x <= hi) return x;
    // A whole number too large (for its key, or for 64 bits): the range's
    // top, so that 3000000000 is not "expected ... >= 0".
    const bool too_large = is_int ? x > hi : v.IsScalar() && is_digits(v.Scalar());
    if (too_large && expected.find(std::to_string(hi)) == std::string::npos)
      fail(v, path, fmt::format("{} (at most {})", expected, hi));
    fail(v, path, expected);
  }

  double number(const YAML::Node& v, const std::string& path, double lo, bool lo_open,
                const std::string& expected) const {
    double x = 0;
    if (!v.IsScalar() || !parse_number(v.Scalar(), x) || x < lo || (lo_open && x == lo))
      fail(v, path, expected);
    return x;
  }

  bool boolean(const YAML::Node& v, const std::string& path) const {
    bool b = false;
    if (!v.IsScalar() || !parse_bool(v.Scalar(), b)) fail(v, path, "true or false");
    return b;
  }

  std::string choice(const YAML::Node& v, const std::string& path,
                     const std::vector<std::string>& names) const {
    const std::string got = v.IsScalar() ? v.Scalar() : "";
    if (v.IsScalar() && std::find(names.begin(), names.end(), got) != names.end()) return got;
    const std::string hint = v.IsScalar() && !got.empty() ? suggestion(got, names) : "";
    fail(v, path, fmt::format("one of {}{}", join(names), hint));
  }

  // Field helpers: read map[key] when present, record its origin.
  template <class F>
  bool field(const YAML::Node& map, const std::string& path, const char* key, F&& read) {
    const YAML::Node v = child(map, key);
    if (!v.IsDefined()) return false;
    const std::string k = join_key(path, key);
    read(v, k);
    record(v, k);
    return true;
  }
  void int_field(const YAML::Node& map, const std::string& path, const char* key, int& out, long long lo,
                 const std::string& expected) {
    field(map, path, key, [&](const YAML::Node& v, const std::string& k) {
      out = static_cast<int>(integer(v, k, lo, kIntMax, expected));
    });
  }

 private:
  std::string file_;
  const std::map<std::string, std::string>& overridden_;
  Config& cfg_;
  bool cross_checks_ = true;
};

}  // namespace fx::detail
