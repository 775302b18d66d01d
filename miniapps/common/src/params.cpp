#include <miniapps/params.hpp>

#include <fx/error.hpp>
#include <fx/exit_code.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>

namespace miniapps {

ParamSet& ParamSet::add(const std::string& key, std::int64_t& value, const std::string& help,
                        std::int64_t min, std::int64_t max) {
  Param p;
  p.key = key;
  p.help = help;
  p.ivalue = &value;
  p.imin = min;
  p.imax = max;
  params_.push_back(p);
  return *this;
}

ParamSet& ParamSet::add(const std::string& key, double& value, const std::string& help, double min,
                        bool min_open, double max) {
  Param p;
  p.key = key;
  p.help = help;
  p.dvalue = &value;
  p.dmin = min;
  p.dmax = max;
  p.min_open = min_open;
  params_.push_back(p);
  return *this;
}

ParamSet& ParamSet::add(const std::string& key, bool& value, const std::string& help) {
  Param p;
  p.key = key;
  p.help = help;
  p.bvalue = &value;
  params_.push_back(p);
  return *this;
}

std::string ParamSet::Param::cli_name() const {
  std::string n = "--" + key;
  std::replace(n.begin(), n.end(), '_', '-');
  return n;
}

std::string ParamSet::Param::text() const {
  if (bvalue) return *bvalue ? "true" : "false";
  if (choice_text) return choice_text();
  return ivalue ? std::to_string(*ivalue) : exact(*dvalue);
}

ParamSet::Param* ParamSet::find(const std::string& key) {
  for (auto& p : params_)
    if (p.key == key) return &p;
  return nullptr;
}

const ParamSet::Param* ParamSet::find(const std::string& key) const {
  return const_cast<ParamSet*>(this)->find(key);
}

void ParamSet::add_cli_options(CLI::App& cli, CliValues& out) const {
  for (const auto& p : params_) {
    const std::string key = p.key;
    const std::string def = p.text();
    cli.add_option_function<std::string>(
           p.cli_name(), [&out, key](const std::string& v) { out[key] = v; },
           p.help + " (YAML app." + key + ", default " + def + ")")
        ->type_name(p.bvalue       ? "BOOL"
                    : p.choice_set ? p.choices
                    : p.ivalue     ? "INT"
                                   : "REAL");
  }
}

void ParamSet::set_from_text(Param& p, const std::string& text, const std::string& position,
                             const std::string& name) {
  if (p.choice_set) {
    if (!p.choice_set(text))
      FX_THROW(fx::ConfigError, position, name, app_ + " expects " + p.choices + ", got '" + text + "'");
  } else if (p.bvalue) {
    // YAML 1.1's spellings, which is what a YAML user expects.
    std::string t = text;
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return std::tolower(c); });
    if (t == "true" || t == "yes" || t == "on" || t == "1")
      *p.bvalue = true;
    else if (t == "false" || t == "no" || t == "off" || t == "0")
      *p.bvalue = false;
    else
      FX_THROW(fx::ConfigError, position, name, app_ + " expects true or false, got '" + text + "'");
  } else if (p.ivalue) {
    std::int64_t v = 0;
    const char* end = text.data() + text.size();
    auto [ptr, ec] = std::from_chars(text.data(), end, v);
    const bool ok = ec == std::errc() && ptr == end && !text.empty();
    if (!ok || v < p.imin || v > p.imax) {
      std::string range = "an integer >= " + std::to_string(p.imin);
      if (p.imax != std::numeric_limits<std::int64_t>::max()) range += " and <= " + std::to_string(p.imax);
      FX_THROW(fx::ConfigError, position, name, app_ + " expects " + range + ", got '" + text + "'");
    }
    *p.ivalue = v;
  } else {
    char* endp = nullptr;
    errno = 0;
    const double v = std::strtod(text.c_str(), &endp);
    const bool ok = !text.empty() && endp == text.c_str() + text.size() && errno == 0 && std::isfinite(v);
    if (!ok || (p.min_open ? v <= p.dmin : v < p.dmin) || v > p.dmax) {
      std::string range = std::string("a number ") + (p.min_open ? "> " : ">= ") + exact(p.dmin);
      if (p.dmax != std::numeric_limits<double>::max()) range += " and <= " + exact(p.dmax);
      FX_THROW(fx::ConfigError, position, name, app_ + " expects " + range + ", got '" + text + "'");
    }
    *p.dvalue = v;
  }
  p.origin = position;
}

void ParamSet::resolve(const fx::ConfigSection& app, const CliValues& cli) {
  app.check_keys(keys());  // fx's wording, as fx::run's up-front check of an fx app
  for (const std::string& key : app.keys())
    set_from_text(*find(key), app.get<std::string>(key, ""), app.position(key), app.path() + "." + key);
  for (const auto& [key, text] : cli) {
    Param* p = find(key);
    if (!p) FX_THROW(fx::ConfigError, "command line", key, "unknown parameter");
    set_from_text(*p, text, "command line", p->cli_name());
  }
}

std::string ParamSet::origin(const std::string& key) const {
  const Param* p = find(key);
  return p ? p->origin : "unknown";
}

void ParamSet::fail(const std::string& key, const std::string& message) const {
  const Param* p = find(key);
  if (!p) FX_THROW(fx::ConfigError, "internal", key, message);
  const std::string name = p->origin == "command line" ? p->cli_name() : "app." + key;
  FX_THROW(fx::ConfigError, p->origin, name, app_ + ": " + key + " = " + p->text() + ": " + message);
}

std::vector<std::pair<std::string, std::string>> ParamSet::values() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : params_) out.emplace_back(p.key, p.text());
  return out;
}

std::vector<std::string> ParamSet::keys() const {
  std::vector<std::string> out;
  for (const auto& p : params_) out.push_back(p.key);
  return out;
}

int launcher_rank() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* v = std::getenv(name)) return std::atoi(v);
  return 0;
}

CliOutcome parse_cli(CLI::App& cli, int argc, char** argv, bool pass_fx_args, int print_rank) {
  CliOutcome out;
  if (pass_fx_args) cli.allow_extras();
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    out.exit = true;
    out.code = e.get_exit_code() == 0 ? 0 : 2;
    if (print_rank == 0) {
      cli.exit(e);  // prints help or the error with CLI11's wording
      fx::write_status(out.code == 0 ? fx::ExitCode::ok : fx::ExitCode::usage,
                       out.code == 0 ? "help shown" : e.what());
    }
    return out;
  }
  if (!pass_fx_args) return out;
  // Only fx's own arguments may remain: --fx-config FILE, --fx-set K=V and
  // their --opt=value forms. Anything else is a mistyped app option.
  const std::vector<std::string> rest = cli.remaining();
  for (std::size_t i = 0; i < rest.size(); ++i) {
    const std::string& a = rest[i];
    const bool fx_opt = a.rfind("--fx-", 0) == 0 || a.rfind("--kokkos-", 0) == 0;
    if (fx_opt && a.find('=') == std::string::npos && i + 1 < rest.size()) {
      out.fx_args.push_back(a);
      out.fx_args.push_back(rest[++i]);
    } else if (fx_opt) {
      out.fx_args.push_back(a);
    } else {
      out.exit = true;
      out.code = 2;
      if (print_rank == 0) {
        const std::string msg = cli.get_name() + ": unknown argument '" + a + "' (see --help)";
        std::cerr << msg << "\n";
        fx::write_status(fx::ExitCode::usage, msg);
      }
      return out;
    }
  }
  return out;
}

std::optional<int> preflight_cli(const ParamSet& set, const std::string& name, const std::string& description,
                                 int argc, char** argv) {
  CLI::App cli{description, name};
  CliValues values;
  set.add_cli_options(cli, values);
  cli.footer("fx options: --fx-config FILE (YAML policy and app: section), --fx-set KEY=VALUE");
  const CliOutcome out = parse_cli(cli, argc, argv, true, launcher_rank());
  if (out.exit) return out.code;
  return std::nullopt;
}

CliValues parse_app_args(const ParamSet& set, const std::string& name, const std::string& description,
                         const std::vector<std::string>& args) {
  CLI::App cli{description, name};
  CliValues values;
  set.add_cli_options(cli, values);
  std::vector<std::string> rest(args.begin() + (args.empty() ? 0 : 1), args.end());
  std::reverse(rest.begin(), rest.end());  // CLI11 takes a vector last argument first
  try {
    cli.parse(rest);
  } catch (const CLI::ParseError& e) {
    FX_THROW(fx::ConfigError, "command line", name, e.what());
  }
  return values;
}

std::string exact(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

std::string hex64(std::uint64_t v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%016" PRIx64, v);
  return buf;
}

}  // namespace miniapps
