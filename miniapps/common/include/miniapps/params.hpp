#pragma once
// Application parameters, declared once and settable both from the YAML
// `app:` section and from the command line (CLI11). Precedence: defaults <
// YAML < command line. Every error is an fx::ConfigError naming the value
// and where it came from ("run.yaml:4:7: app.nx: ...", "command line: --nx: ...").
#include <CLI/CLI.hpp>

#include <fx/config_section.hpp>
#include <fx/enum_names.hpp>

#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace miniapps {

// Command-line values, kept as text until they are merged with the YAML
// section and validated together. Key: the parameter's YAML key.
using CliValues = std::map<std::string, std::string>;

class ParamSet {
 public:
  explicit ParamSet(std::string app) : app_(std::move(app)) {}

  ParamSet& add(const std::string& key, std::int64_t& value, const std::string& help, std::int64_t min,
                std::int64_t max = std::numeric_limits<std::int64_t>::max());
  // min_open: value must be > min (else >= min).
  ParamSet& add(const std::string& key, double& value, const std::string& help, double min, bool min_open,
                double max = std::numeric_limits<double>::max());
  // A switch: true/false (also yes/no, on/off, 1/0) in YAML and on the
  // command line (--key true).
  ParamSet& add(const std::string& key, bool& value, const std::string& help);
  // One of an enum's names (FX_ENUM_NAMES), e.g. `problem: minife`.
  template <class E, class = std::enable_if_t<std::is_enum_v<E>>>
  ParamSet& add(const std::string& key, E& value, const std::string& help) {
    Param p;
    p.key = key;
    p.help = help;
    p.choices = fx::enum_choices<E>();
    p.choice_text = [&value] { return std::string(fx::to_string(value)); };
    p.choice_set = [&value](const std::string& text) {
      const auto v = fx::from_string<E>(text);
      if (v) value = *v;
      return v.has_value();
    };
    params_.push_back(std::move(p));
    return *this;
  }

  // One --key-with-dashes option per parameter, its text stored in `out`.
  void add_cli_options(CLI::App& cli, CliValues& out) const;
  // Merge `app` (the `app:` section, which knows where each key was set:
  // file:line:column, env FX_CFG_APP__..., --fx-set) and `cli` into the
  // bound values; throws fx::ConfigError.
  void resolve(const fx::ConfigSection& app, const CliValues& cli);
  // Where a parameter's value came from: "default", "run.yaml:3:5", "--nx".
  std::string origin(const std::string& key) const;
  // Throw an fx::ConfigError about `key`, naming its value and origin.
  [[noreturn]] void fail(const std::string& key, const std::string& message) const;
  // (key, value text) in declaration order, for reports.
  std::vector<std::pair<std::string, std::string>> values() const;
  // The declared keys (the `app:` section's, for fx::run's up-front check).
  std::vector<std::string> keys() const;

 private:
  struct Param {
    std::string key, help;
    std::int64_t* ivalue = nullptr;
    double* dvalue = nullptr;
    bool* bvalue = nullptr;
    std::int64_t imin = 0, imax = 0;
    double dmin = 0, dmax = 0;
    bool min_open = false;
    std::string choices;  // an enum's: "a | b"
    std::function<std::string()> choice_text;
    std::function<bool(const std::string&)> choice_set;
    std::string origin = "default";
    std::string cli_name() const;
    std::string text() const;
  };
  void set_from_text(Param& p, const std::string& text, const std::string& position, const std::string& name);
  Param* find(const std::string& key);
  const Param* find(const std::string& key) const;

  std::string app_;
  std::vector<Param> params_;
};

// Outcome of parsing the command line.
struct CliOutcome {
  bool exit = false;  // stop now with `code` (help shown, or an error)
  int code = 0;
  std::vector<std::string> fx_args;  // pass-through fx arguments (fx apps)
};

// Parse argv with `cli`. With pass_fx_args, fx's own --fx-config FILE and
// --fx-set KEY=VALUE (and --fx-...=..., --kokkos-...) are collected in
// fx_args; any other unknown argument is an error. Only `print_rank` 0
// prints help and errors, and it writes the launcher verdict when exiting.
CliOutcome parse_cli(CLI::App& cli, int argc, char** argv, bool pass_fx_args, int print_rank);

// For fx apps, in main() before fx::run (MPI not started yet): --help,
// malformed and unknown flags end the run here, with the exit code to
// return; fx's and Kokkos' arguments pass through. The values themselves
// are read again from ctx.args() in setup(), where the YAML section is
// known too (parse_app_args).
std::optional<int> preflight_cli(const ParamSet& set, const std::string& name, const std::string& description,
                                 int argc, char** argv);
// The app's flag values from a command line (program name first, fx's
// arguments already removed). Throws fx::ConfigError.
CliValues parse_app_args(const ParamSet& set, const std::string& name, const std::string& description,
                         const std::vector<std::string>& args);

// This process's rank as the launcher numbers it (before MPI_Init): Open
// MPI / PMIx environment, 0 when launched alone.
int launcher_rank();

// A number as text that reads back to the same double ("%.17g").
std::string exact(double v);
std::string hex64(std::uint64_t v);

}  // namespace miniapps
