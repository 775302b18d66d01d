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
  /// \tparam T the value's type
  /// \param key a key of this section (no dots: section() reaches a nested map)
  /// \param fallback returned when the section does not set `key`
  /// \return the value set, converted to T, or `fallback`
  /// \throws ConfigError for a value that is not a T or is out of T's range
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
  /// \param key a key of this section
  /// \param fallback returned when the section does not set `key` (not null)
  /// \return the string set, or `fallback`
  /// \throws ConfigError for a value that is not a string (a map or a list)
  std::string get(const std::string& key, const char* fallback) const {
    return get_value(key, std::string(fallback));
  }

  /// Whether the section sets `key` (to anything, a map or list included).
  /// \param key a key of this section
  /// \return true when it is set, even to null
  bool has(const std::string& key) const;
  /// The keys the section sets, in the order they were written.
  /// \return the keys (without the section's path); empty for an empty section
  std::vector<std::string> keys() const;
  /// The map at `key` (empty when absent).
  /// \param key a key of this section
  /// \return the nested section, its path "<path>.<key>"; sharing this one's data
  /// \throws ConfigError when `key` is set to something other than a map
  ConfigSection section(const std::string& key) const;
  /// Throws ConfigError for the first key not in `known`, naming where it was
  /// set and the nearest known key ("... expected one of nx, steps (did you
  /// mean 'steps'?), got 'stepz'").
  /// \param known every key this section may set (nested maps' keys: check those sections)
  /// \throws ConfigError for a key the section sets that is not in `known`
  void check_keys(const std::vector<std::string>& known) const;
  /// Throws ConfigError "<where key is>: app.key: expected <expected>, got
  /// '<value>'": for an app's own checks (`reject("nx", "an even number")`).
  /// \param key the key whose value is refused (set or not)
  /// \param expected what would have been accepted, as the message says it
  /// \throws ConfigError always
  [[noreturn]] void reject(const std::string& key, const std::string& expected) const;

  /// The section's dotted path: "app", "app.grid".
  /// \return the path, valid as long as this section
  const std::string& path() const;
  /// Where `key` (or, when absent, the section) was set: "run.cfg:4:7",
  /// "env FX_CFG_APP__NX", "--fx-set".
  /// \param key a key of this section
  /// \return the position, as ConfigError::position() would name it
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
/// \param file the YAML file's path
/// \param origin where the path came from, for the error of an unreadable file
/// \return its `app:` section; an empty section when the file has none
/// \throws ConfigError for a file that cannot be read, invalid YAML, or an `app:` that is not
///   a map
ConfigSection load_app_section(const std::string& file, const std::string& origin);

}  // namespace fx
