// Where configuration comes from: the YAML file, FX_* environment variables
// (named aliases from the schema, FX_CFG_A__B, FX_INJECT) and --fx-set
// overrides are merged into one YAML tree (file < env < command line),
// which the schema then walks once. Every value remembers where it came
// from. Nothing here touches MPI: every rank reads the same inputs and
// reaches the same verdict.
#include <fx/detail/files.hpp>
#include <fx/detail/status.hpp>

#include <fmt/format.h>
#include <sys/stat.h>
#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include <unistd.h>  // environ

#include "config_schema.hpp"

namespace fx {
namespace {

using namespace detail;

std::vector<std::string> split_key(const std::string& key) {
  std::vector<std::string> parts;
  std::stringstream in(key);
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  return parts;
}

bool valid_key(const std::string& key) {
  if (key.empty() || key.front() == '.' || key.back() == '.') return false;
  for (std::size_t i = 0; i < key.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(key[i]);
    if (c == '.' && key[i + 1] == '.') return false;
    if (!(std::isalnum(c) || c == '_' || c == '-' || c == '.')) return false;
  }
  return true;
}

// One override: a value for a key, and where it was given.
struct Override {
  std::string key;
  YAML::Node value;
  std::string position;
};

// Sets root[a][b][c] = value, creating maps; returns the keys it created.
void set_key(const YAML::Node& root, const Override& o, std::map<std::string, std::string>& overridden) {
  const auto parts = split_key(o.key);
  YAML::Node cur;
  cur.reset(root);
  std::string path;
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    path = join_key(path, parts[i]);
    YAML::Node next = cur[parts[i]];
    if (!next.IsDefined() || next.IsNull()) {
      cur[parts[i]] = YAML::Node(YAML::NodeType::Map);
      overridden[path] = o.position;
    } else if (path == "spares" && next.IsScalar()) {
      YAML::Node m(YAML::NodeType::Map);  // spares: S shorthand -> {count: S}
      m["count"] = YAML::Clone(next);
      cur[parts[i]] = m;
    } else if (!next.IsMap()) {
      FX_THROW(ConfigError, o.position, o.key,
               fmt::format("expected {} to be a map, got '{}'", path, node_text(next)));
    }
    YAML::Node n = cur[parts[i]];
    cur.reset(n);
  }
  cur[parts.back()] = o.value;
  // The whole subtree is new: earlier overrides below it are gone.
  for (auto it = overridden.lower_bound(o.key); it != overridden.end() && it->first.rfind(o.key, 0) == 0;) {
    const char next = it->first.size() > o.key.size() ? it->first[o.key.size()] : '\0';
    it = next == '.' || next == '[' ? overridden.erase(it) : std::next(it);
  }
  overridden[o.key] = o.position;
}

// The file's text, or a one-line ConfigError: a directory, a FIFO (which
// would block every rank), a device or an oversized file is not a config.
std::string read_config_file(const std::string& file, const std::string& origin) {
  constexpr std::uintmax_t kMaxBytes = 16u << 20;
  auto reject = [&](const std::string& why) {
    FX_THROW(ConfigError, origin, file,
             fmt::format("expected a readable YAML file, got '{}' ({})", file, why));
  };
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) reject(detail::errno_text(errno));
  if (S_ISDIR(st.st_mode)) reject("a directory");
  if (!S_ISREG(st.st_mode)) reject(S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file");
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxBytes) {
    reject(
        fmt::format("{} bytes, more than the {} MiB a configuration may have", st.st_size, kMaxBytes >> 20));
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(text.size())))
    reject(detail::errno_text(errno));
  return text;
}

// Where each document starts; nothing else is kept.
class DocumentStarts : public YAML::EventHandler {
 public:
  std::vector<YAML::Mark> marks;
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t,
                       YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {
  }
  void OnMapEnd() override {}
};

// The documents counted with a bound: yaml-cpp 0.7's LoadAll never ends on
// texts such as "!," (an endless run of empty documents, jbeder/yaml-cpp
// #1040; found by fuzz_config), so it is not used.
constexpr std::size_t kMaxDocuments = 16;
std::vector<YAML::Mark> document_starts(const std::string& text) {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  while (starts.marks.size() <= kMaxDocuments && parser.HandleNextDocument(starts)) {
  }
  return starts.marks;
}

}  // namespace

YAML::Node detail::load_yaml_file(const std::string& file, const std::string& origin) {
  const std::string text = read_config_file(file, origin);
  YAML::Node root(YAML::NodeType::Map);
  try {
    const auto starts = document_starts(text);
    if (starts.size() > 1) {
      FX_THROW(ConfigError, fmt::format("{}:{}:{}", file, starts[1].line + 1, starts[1].column + 1),
               "document",
               fmt::format("expected one YAML document, got {}{}",
                           starts.size() > kMaxDocuments ? "more than " : "",
                           std::min(starts.size(), kMaxDocuments)));
    }
    const YAML::Node doc = starts.empty() ? YAML::Node() : YAML::Load(text);
    if (!doc.IsNull()) root = doc;
  } catch (const YAML::Exception& e) {
    FX_THROW(ConfigError, fmt::format("{}:{}:{}", file, e.mark.line + 1, e.mark.column + 1), "yaml",
             fmt::format("expected valid YAML, got '{}'", e.msg));
  }
  if (!root.IsMap()) {
    FX_THROW(
        ConfigError, mark_position(file, root), "document",
        fmt::format("expected a map of sections ({}), got '{}'", join(section_keys("")), node_text(root)));
  }
  return root;
}

namespace {

// The file's spares count as written (spares: S or spares: {count: S}), or "".
std::string file_spares_of(YAML::Node& root) {
  std::string file_spares;
  const YAML::Node s = root["spares"];
  if (s.IsDefined() && s.IsScalar()) file_spares = s.Scalar();
  if (s.IsDefined() && s.IsMap() && s["count"].IsDefined() && s["count"].IsScalar())
    file_spares = s["count"].Scalar();
  return file_spares;
}

// Whether override o sets the spares count to another value than the file's.
bool overrides_file_spares(const Override& o, const std::string& file_spares) {
  return (o.key == "spares.count" || o.key == "spares") && !file_spares.empty() && o.value.IsScalar() &&
         o.value.Scalar() != file_spares;
}

// The file's tree read alone, for its errors (its values are not kept).
void validate_file_alone(const std::string& file, const YAML::Node& root) {
  Config file_only;
  const std::map<std::string, std::string> none;
  Walker fw(file, none, file_only, /*cross_checks=*/false);
  read_tree(fw, root, file_only);
}

// The environment's overrides, then the command line's, into root; where
// each set key came from into `overridden`. The launcher's FX_SPARES wins
// over the file: a note in cfg says so when they differ.
void apply_overrides(YAML::Node& root, const std::vector<Override>& env, const std::vector<Override>& sets,
                     const std::string& file, const std::string& file_spares, Config& cfg,
                     std::map<std::string, std::string>& overridden) {
  for (const auto* layer : {&env, &sets}) {
    for (const auto& o : *layer) {
      if (overrides_file_spares(o, file_spares)) {
        cfg.notes.push_back(fmt::format("{}={} overrides spares: {} from {}", o.position, o.value.Scalar(),
                                        file_spares, file));
      }
      set_key(root, o, overridden);
    }
  }
}

Config load(const std::string& file, const std::string& file_origin, const std::vector<Override>& env,
            const std::vector<Override>& sets) {
  Config cfg;
  cfg.source = file;
  YAML::Node root(YAML::NodeType::Map);
  if (!file.empty()) root = load_yaml_file(file, file_origin);

  // The launcher's FX_SPARES wins over the file; say so when they differ.
  const std::string file_spares = file_spares_of(root);

  // Every source is validated, not only the one that wins: a bad value in
  // the file is an error even when the environment overrides it.
  if (!file.empty() && !(env.empty() && sets.empty())) validate_file_alone(file, root);

  std::map<std::string, std::string> overridden;
  apply_overrides(root, env, sets, file, file_spares, cfg, overridden);

  Walker w(file, overridden, cfg);
  read_tree(w, root, cfg);
  // Apps look their keys up later (config_get): keep where overrides came from.
  for (const auto& [key, position] : overridden)
    if (key == "app" || key.rfind("app.", 0) == 0) cfg.origins[key] = ConfigOrigin{position, key};
  return cfg;
}

std::vector<Override> env_overrides(std::vector<std::string> env) {
  // Deterministic order whatever the environment's (sorted before any
  // YAML::Node exists: assigning Nodes, as sorting does, aliases them).
  std::sort(env.begin(), env.end());
  std::vector<Override> out;
  for (const auto& entry : env) {
    const auto eq = entry.find('=');
    if (eq == std::string::npos || entry.rfind("FX_", 0) != 0) continue;
    const std::string name = entry.substr(0, eq);
    const std::string value = entry.substr(eq + 1);
    const std::string pos = "env " + name;
    if (name == "FX_INJECT") {
      out.push_back({"inject.failures", parse_inject_env(value), pos});
    } else if (name.rfind("FX_CFG_", 0) == 0) {
      // FX_CFG_CHECKPOINT__MEMORY__EVERY -> checkpoint.memory.every
      std::string key;
      for (std::size_t i = 7; i < name.size(); ++i) {
        if (name.compare(i, 2, "__") == 0)
          key += '.', ++i;
        else
          key += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
      }
      if (!valid_key(key)) {
        FX_THROW(ConfigError, pos, key.empty() ? name : key,
                 fmt::format("expected FX_CFG_<SECTION>__<KEY>=value, got '{}'", entry));
      }
      out.push_back({key, YAML::Node(value), pos});
    } else {
      for (const auto& k : config_schema())
        if (k.env == name) out.push_back({k.path, YAML::Node(value), pos});
    }
  }
  return out;
}

Override parse_set(const std::string& text) {
  const auto eq = text.find('=');
  const std::string key = eq == std::string::npos ? text : text.substr(0, eq);
  if (eq == std::string::npos || !valid_key(key)) {
    FX_THROW(ConfigError, "--fx-set", key.empty() ? "<key>" : key,
             fmt::format("expected key=value with a dotted key (e.g. checkpoint.memory.every=10), got '{}'",
                         text));
  }
  const std::string value = text.substr(eq + 1);
  YAML::Node node;
  try {
    node = YAML::Load(value);
  } catch (const YAML::Exception& e) {
    FX_THROW(ConfigError, "--fx-set", key, fmt::format("expected a YAML value, got '{}' ({})", value, e.msg));
  }
  if (!node.IsDefined()) node = YAML::Node(YAML::NodeType::Null);
  return Override{key, node, "--fx-set"};
}

}  // namespace

ConfigOrigin Config::origin_of(const std::string& key) const {
  const auto it = origins.find(key);
  if (it != origins.end()) return it->second;
  return ConfigOrigin{source.empty() ? "default" : source, key};
}

Config load_config(const std::string& file, const std::vector<std::string>& env,
                   const std::vector<std::string>& sets) {
  std::vector<Override> set_overrides;
  for (const auto& s : sets) set_overrides.push_back(parse_set(s));
  std::string path = file;
  std::string origin = "--fx-config";
  if (path.empty()) {
    for (const auto& e : env)
      if (e.rfind("FX_CONFIG=", 0) == 0) path = e.substr(10), origin = "env FX_CONFIG";
  }
  Config cfg = load(path, origin, env_overrides(env), set_overrides);
  check_paths(cfg, env);
  return cfg;
}

namespace {

// An fx flag with a value at argv[i], as `flag value` or `flag=value`:
// true with the value in `into` (and i on its last argument); false when
// argv[i] is something else.
bool flag_value(const char* flag, int argc, char** argv, int& i, std::string& into) {
  const std::string arg = argv[i];
  const std::string f = flag;
  if (arg == f) {
    // An fx flag is never a value (`app --fx-config --fx-set k=v`).
    const std::string next = i + 1 < argc ? argv[i + 1] : "";
    const bool flag_next = next.rfind("--fx-", 0) == 0;
    if (i + 1 >= argc || flag_next)
      FX_THROW(ConfigError, f, f == "--fx-set" ? "<key>" : "<file>",
               fmt::format("expected {} after {}, got {}", f == "--fx-set" ? "key=value" : "a file", f,
                           flag_next ? "the flag '" + next + "'" : "''"));
    into = argv[++i];
    return true;
  }
  if (arg.rfind(f + "=", 0) == 0) {
    into = arg.substr(f.size() + 1);
    return true;
  }
  return false;
}

// fx owns the prefix: a mistyped flag must not run with defaults.
[[noreturn]] void refuse_unknown_flag(const std::string& arg) {
  const std::string flag = arg.substr(0, arg.find('='));
  FX_THROW(ConfigError, "command line", flag,
           fmt::format("expected --fx-config FILE or --fx-set KEY=VALUE{}, got '{}'",
                       detail::suggestion(flag, {"--fx-config", "--fx-set"}), arg));
}

// The process's FX_* variables.
std::vector<std::string> fx_environment() {
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "FX_", 3) == 0) env.emplace_back(*e);
  return env;
}

}  // namespace

Config load_config(int& argc, char** argv) {
  std::string file;
  std::vector<std::string> sets;
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string v;
    if (flag_value("--fx-config", argc, argv, i, v)) {
      if (!file.empty())
        FX_THROW(ConfigError, "--fx-config", v,
                 fmt::format("expected one configuration file, got '{}' after '{}'", v, file));
      file = v;
    } else if (flag_value("--fx-set", argc, argv, i, v)) {
      sets.push_back(v);
    } else if (arg.rfind("--fx-", 0) == 0) {
      refuse_unknown_flag(arg);
    } else {
      argv[out++] = argv[i];
    }
  }
  if (out < argc) argv[out] = nullptr;
  argc = out;
  return load_config(file, fx_environment(), sets);
}

}  // namespace fx

namespace fx::detail {

namespace {

// "a.b.c=..." with identifier-like parts: the first part, else "".
std::string dotted_key_head(const std::string& arg) {
  const auto eq = arg.find('=');
  const std::string key = arg.substr(0, eq);
  if (eq == std::string::npos || key.find('.') == std::string::npos) return "";
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_'; };
  std::size_t part = 0;
  for (std::size_t i = 0; i <= key.size(); ++i) {
    if (i < key.size() && word(key[i])) continue;
    if (i == part || (i < key.size() && key[i] != '.')) return "";  // an empty part, or another sign
    part = i + 1;
  }
  if (std::isdigit(static_cast<unsigned char>(key[0])) != 0) return "";
  return key.substr(0, key.find('.'));
}

}  // namespace

std::vector<std::string> setting_like_arguments(int argc, char** argv) {
  const auto sections = section_keys("");
  std::vector<std::string> found;
  for (int i = 1; i < argc; ++i) {
    if (argv[i] == nullptr) continue;
    const std::string head = dotted_key_head(argv[i]);
    if (!head.empty() && std::find(sections.begin(), sections.end(), head) != sections.end())
      found.emplace_back(argv[i]);
  }
  return found;
}

int print_launch(int argc, char** argv) {
  try {
    const Config c = load_config(argc, argv);
    std::printf("detector.period_s %s\ndetector.timeout_s %s\nrecovery.on_exhausted %s\nreport.path %s\n",
                fmt::format("{}", c.detector.period_s).c_str(),
                fmt::format("{}", c.detector.timeout_s).c_str(),
                std::string(to_string(c.recovery.on_exhausted)).c_str(), c.report_path.c_str());
  } catch (const ConfigError& e) {
    print_usage_error(e.what());
    return static_cast<int>(ExitCode::usage);
  }
  std::fflush(stdout);
  return 0;
}

}  // namespace fx::detail
