#pragma once
/// \file
/// An application's configuration section (`app:`, or a map inside it):
/// typed lookups whose errors name where the value was set, the way fx's
/// own keys do ("run.cfg:4:7: app.nx: expected an integer, got 'x'", "env
/// FX_CFG_APP__NX: ...", "--fx-set: ..."). The YAML behind it stays inside
/// fx: its parser is a private dependency.
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

namespace fx {

namespace detail {
struct SectionData;
struct SectionAccess;
}  // namespace detail

/// A map of the configuration (`app:` or one inside it) with typed lookups;
/// cheap to copy (copies share the parsed data).
class ConfigSection {
 public:
  /// An empty `app:` section: every get() returns its fallback.
  ConfigSection() noexcept = default;

  /// The value of `key`, or `fallback` when the section does not set it.
  /// T: std::string, bool, double, a signed or unsigned integer type. Throws
  /// ConfigError "<where>: app.key: expected an integer, got 'x'" for a value
  /// that is not a T (or does not fit one).
  template <class T>
  T get(const std::string& key, const T& fallback) const {
    static_assert(std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_same_v<T, double> ||
                      std::is_integral_v<T>,
                  "fx::ConfigSection::get<T>: T is std::string, bool, double or an integer type");
    if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, bool> || std::is_same_v<T, double>) {
      return get_value(key, fallback);
    } else if constexpr (std::is_signed_v<T>) {
      return static_cast<T>(
          get_int(key, fallback, std::numeric_limits<T>::min(), std::numeric_limits<T>::max()));
    } else {
      return static_cast<T>(get_uint(key, fallback, std::numeric_limits<T>::max()));
    }
  }
  /// get<std::string>, for a string literal fallback.
  std::string get(const std::string& key, const char* fallback) const {
    return get_value(key, std::string(fallback));
  }

  /// Whether the section sets `key` (to anything, a map or list included).
  bool has(const std::string& key) const;
  /// The keys the section sets, in the order they were written.
  std::vector<std::string> keys() const;
  /// The map at `key` (empty when absent). Throws ConfigError when `key` is
  /// set to something other than a map.
  ConfigSection section(const std::string& key) const;
  /// Throws ConfigError for the first key not in `known`, naming where it was
  /// set and the nearest known key ("... expected one of nx, steps (did you
  /// mean 'steps'?), got 'stepz'").
  void check_keys(const std::vector<std::string>& known) const;
  /// Throws ConfigError "<where key is>: app.key: expected <expected>, got
  /// '<value>'": for an app's own checks (`reject("nx", "an even number")`).
  [[noreturn]] void reject(const std::string& key, const std::string& expected) const;

  /// The section's dotted path: "app", "app.grid".
  const std::string& path() const;
  /// Where `key` (or, when absent, the section) was set: "run.cfg:4:7",
  /// "env FX_CFG_APP__NX", "--fx-set".
  std::string position(const std::string& key) const;

 private:
  friend struct detail::SectionAccess;
  explicit ConfigSection(std::shared_ptr<const detail::SectionData> d);
  const detail::SectionData& data() const;  ///< *data_, or an empty section's
  std::string get_value(const std::string& key, const std::string& fallback) const;
  bool get_value(const std::string& key, bool fallback) const;
  double get_value(const std::string& key, double fallback) const;
  long long get_int(const std::string& key, long long fallback, long long min, long long max) const;
  unsigned long long get_uint(const std::string& key, unsigned long long fallback,
                              unsigned long long max) const;

  std::shared_ptr<const detail::SectionData> data_;  ///< immutable, shared by copies; null: empty
};

/// The `app:` section of a YAML file alone (a plain program reading the
/// same configuration files as its fx twin). `origin` says where the file
/// name came from ("--config"); errors name it for a file that cannot be
/// read, and file:line:column for the rest.
ConfigSection load_app_section(const std::string& file, const std::string& origin);

}  // namespace fx
