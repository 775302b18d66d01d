// The schema table (one entry per key) and the walk it drives. Adding a
// key: a member in fx/config.hpp (its default there), one entry below, a
// row in docs/config.md (checked by the config_docs test).
#include "config_schema.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <optional>
#include <sstream>
#include <type_traits>

namespace fx::detail {
namespace {

// The defaults are the struct initializers in fx/config.hpp.
const Config& defaults() {
  static const Config config;
  return config;
}

template <class Ref>
using ValueOf =
    std::remove_cv_t<std::remove_reference_t<decltype(std::declval<Ref>()(std::declval<Config&>()))>>;

ConfigKey entry(std::string path, std::string type, std::string default_text, std::string doc,
                std::string env) {
  ConfigKey k;
  k.path = std::move(path);
  k.type = std::move(type);
  k.default_text = std::move(default_text);
  k.doc = std::move(doc);
  k.env = std::move(env);
  return k;
}

template <class Ref>
ConfigKey echoing(ConfigKey k, Ref ref) {
  k.echo = [ref](const Config& c) { return YAML::Node(ref(c)); };
  return k;
}

// An integer in [lo, max of its type]; `expected` is the error's wording.
template <class Ref>
ConfigKey integer(std::string path, Ref ref, long long lo, const std::string& expected, std::string doc,
                  std::string env = "", long long hi = std::numeric_limits<long long>::max()) {
  using T = ValueOf<Ref>;
  const bool bounded = hi != std::numeric_limits<long long>::max();
  ConfigKey k =
      entry(std::move(path), bounded ? fmt::format("int {}..{}", lo, hi) : fmt::format("int >= {}", lo),
            fmt::format("{}", ref(defaults())), std::move(doc), std::move(env));
  k.read = [ref, lo, hi, expected](Walker& w, const YAML::Node& v, const std::string& shown, Config& c) {
    if constexpr (std::is_same_v<T, std::uint64_t>) {
      static_cast<void>(lo), static_cast<void>(hi);  // uint64 keys take the type's whole range
      if (!v.IsScalar() || !parse_uint(v.Scalar(), ref(c))) w.fail(v, shown, expected);
    } else {
      const long long top = std::min<long long>(hi, std::numeric_limits<T>::max());
      ref(c) = static_cast<T>(w.integer(v, shown, lo, top, expected));
    }
  };
  return echoing(std::move(k), ref);
}

// A finite number >= lo (> lo when `open`).
template <class Ref>
ConfigKey number(std::string path, Ref ref, bool open, std::string doc, std::string env = "",
                 std::string expected = "") {
  if (expected.empty()) expected = open ? "a number > 0" : "a number >= 0";
  ConfigKey k = entry(std::move(path), open ? "number > 0" : "number >= 0",
                      fmt::format("{}", ref(defaults())), std::move(doc), std::move(env));
  k.read = [ref, open, expected](Walker& w, const YAML::Node& v, const std::string& shown, Config& c) {
    ref(c) = w.number(v, shown, 0.0, open, expected);
  };
  return echoing(std::move(k), ref);
}

// An interval >= 0 (0: off) or `auto`, which sets the flag `is_auto` gives.
template <class Ref, class AutoRef>
ConfigKey interval(std::string path, Ref ref, AutoRef is_auto, std::string doc) {
  ConfigKey k =
      entry(std::move(path), "int >= 0 \\| `auto`", fmt::format("{}", ref(defaults())), std::move(doc), "");
  k.read = [ref, is_auto](Walker& w, const YAML::Node& v, const std::string& shown, Config& c) {
    is_auto(c) = v.IsScalar() && v.Scalar() == "auto";
    if (!is_auto(c))
      ref(c) = static_cast<int>(
          w.integer(v, shown, 0, std::numeric_limits<int>::max(), "an interval >= 0 (0: off) or auto"));
  };
  k.echo = [ref, is_auto](const Config& c) {
    return is_auto(c) ? YAML::Node(std::string("auto")) : YAML::Node(ref(c));
  };
  return k;
}

template <class Ref>
ConfigKey boolean(std::string path, Ref ref, std::string doc) {
  ConfigKey k = entry(std::move(path), "bool", ref(defaults()) ? "true" : "false", std::move(doc), "");
  k.read = [ref](Walker& w, const YAML::Node& v, const std::string& shown, Config& c) {
    ref(c) = w.boolean(v, shown);
  };
  return echoing(std::move(k), ref);
}

// A path; `null_is_none`: `key: ~` means none ("").
template <class Ref>
ConfigKey path(std::string key, Ref ref, const std::string& expected, bool null_is_none, std::string doc,
               std::string env) {
  const std::string& d = ref(defaults());
  ConfigKey k =
      entry(std::move(key), "path", d.empty() ? "(none)" : "`" + d + "`", std::move(doc), std::move(env));
  k.read = [ref, expected, null_is_none](Walker& w, const YAML::Node& v, const std::string& shown,
                                         Config& c) {
    if (null_is_none && v.IsNull()) return void(ref(c).clear());
    ref(c) = w.scalar(v, shown, expected);
    if (!null_is_none && ref(c).empty()) w.fail(v, shown, expected);
  };
  return echoing(std::move(k), ref);
}

// One of a choice's names. `Ref` gives an E or a std::optional<E> (absent:
// any); `parse` may accept more spellings than `names`.
template <class E, class Ref, class Parse, class Name>
ConfigKey choice(std::string path, Ref ref, const std::vector<std::string>& names, Parse parse, Name name,
                 std::string doc, std::string env = "") {
  using T = ValueOf<Ref>;
  std::string type;
  for (const auto& n : names) type += (type.empty() ? "`" : " \\| `") + n + "`";
  std::string def = "(any)";
  if constexpr (std::is_same_v<T, E>) def = fmt::format("`{}`", name(ref(defaults())));
  ConfigKey k = entry(std::move(path), type, def, std::move(doc), std::move(env));
  k.read = [ref, names, parse](Walker& w, const YAML::Node& v, const std::string& shown, Config& c) {
    // `parse` may take more spellings; the names give the error.
    const std::optional<E> got = v.IsScalar() ? parse(v.Scalar()) : std::nullopt;
    ref(c) = got ? *got : *parse(w.choice(v, shown, names));
  };
  k.echo = [ref, name](const Config& c) {
    if constexpr (std::is_same_v<T, E>) {
      return YAML::Node(std::string(name(ref(c))));
    } else {
      return ref(c) ? YAML::Node(std::string(name(*ref(c)))) : YAML::Node(YAML::NodeType::Undefined);
    }
  };
  return k;
}

// A choice named through fx/enum_names.hpp.
template <class E, class Ref>
ConfigKey named(std::string path, Ref ref, std::string doc, std::string env = "") {
  std::vector<std::string> names;
  for (const auto& entry : EnumNames<E>::names) names.emplace_back(entry.second);
  return choice<E>(
      std::move(path), ref, std::move(names), [](const std::string& s) { return from_string<E>(s); },
      [](E e) { return to_string(e); }, std::move(doc), std::move(env));
}

// m is a member path (a.b), not an expression: it cannot be parenthesised.
#define FX_MEMBER(m) \
  [](auto& c) -> auto& { return c.m; }  // NOLINT(bugprone-macro-parentheses)

// The keys of one part of the configuration each, in the order they are documented.
std::vector<ConfigKey> spares_recovery_detector_keys() {
  return {
      integer("spares.count", FX_MEMBER(spares.count), 0, "a number of spares >= 0",
              "the last S processes wait as spares", "FX_SPARES"),
      named<SpareIdle>("spares.idle", FX_MEMBER(spares.idle), "how a spare waits", "FX_SPARE_IDLE"),
      number("spares.poll_interval_ms", FX_MEMBER(spares.poll_interval_ms), true,
             "sleep: time between checks"),
      named<SparePlacement>("spares.placement", FX_MEMBER(spares.placement), "which processes are spares"),
      named<ExhaustedPolicy>("recovery.on_exhausted", FX_MEMBER(recovery.on_exhausted),
                             "no spare left for a failed rank: stop, or go on with fewer ranks",
                             "FX_ON_EXHAUSTED"),
      integer("recovery.max_rounds", FX_MEMBER(recovery.max_rounds), 1, "an integer >= 1",
              "repair rounds per failure before giving up"),
      number("recovery.timeout_s", FX_MEMBER(recovery.timeout_s), true, "bound on one repair"),
      integer("recovery.max_failures", FX_MEMBER(recovery.max_failures), 0, "an integer >= 0",
              "failures survived in one run before giving up"),
      named<LostCheckpointPolicy>("recovery.on_lost_checkpoint", FX_MEMBER(recovery.on_lost_checkpoint),
                                  "no checkpoint can be restored: stop, or start again from iteration 0"),
      number("detector.period_s", FX_MEMBER(detector.period_s), false, "heartbeat period (0: off)",
             "FX_DETECTOR_PERIOD"),
      number("detector.timeout_s", FX_MEMBER(detector.timeout_s), false, "heartbeat timeout (0: 4 x period)",
             "FX_DETECTOR_TIMEOUT"),
  };
}

// What a storage level's shared keys say, and where its own go.
struct StorageTexts {
  const char* where;          // every: "node-local storage"
  const char* directory;      // directory's doc
  const char* directory_env;  // its environment variable ("": none)
  const char* retained;       // keep: "per node directory"
  const char* unusable;       // on_unusable's doc
};

// The keys every storage level has (StorageLevelConfig: every, directory,
// keep, on_unusable) under `prefix`, of the part `level` picks out of the
// configuration; the level's own keys `own` go in before key `at`.
template <class Part>
std::vector<ConfigKey> storage_level_keys(const std::string& prefix, Part level, const StorageTexts& t,
                                          std::size_t at, std::vector<ConfigKey> own) {
  auto field = [level](auto member) {
    return [ level, member ](auto& c) -> auto& { return level(c).*member; };
  };
  std::vector<ConfigKey> keys = {
      integer(prefix + ".every", field(&StorageLevelConfig::every), 0, "an interval >= 0 (0: off)",
              fmt::format("every m-th memory version also goes to {}", t.where)),
      path(prefix + ".directory", field(&StorageLevelConfig::directory), "a directory path", false,
           t.directory, t.directory_env),
      integer(prefix + ".keep", field(&StorageLevelConfig::keep), 1, "a number of versions >= 1",
              fmt::format("complete versions retained {}", t.retained)),
      named<UnusablePolicy>(prefix + ".on_unusable", field(&StorageLevelConfig::on_unusable), t.unusable),
  };
  keys.insert(keys.begin() + static_cast<std::ptrdiff_t>(at), own.begin(), own.end());
  return keys;
}

std::vector<ConfigKey> checkpoint_keys() {
  std::vector<ConfigKey> keys = {
      interval("checkpoint.memory.every", FX_MEMBER(checkpoint.memory.every),
               FX_MEMBER(checkpoint.memory.every_auto), "commit a version every k iterations"),
      integer("checkpoint.memory.buddy_distance", FX_MEMBER(checkpoint.memory.buddy_distance), 1,
              "a distance >= 1", "rank r's copy lives on rank (r + d) mod N"),
      named<MemoryScheme>("checkpoint.memory.scheme", FX_MEMBER(checkpoint.memory.scheme),
                          "full copy on the buddy, or XOR parity over groups"),
      integer("checkpoint.memory.parity_group", FX_MEMBER(checkpoint.memory.parity_group), 2,
              "a group size >= 2", "parity: ranks per group"),
      integer("checkpoint.memory.depth", FX_MEMBER(checkpoint.memory.depth), 1, "a number of versions >= 1",
              "versions kept in memory"),
      boolean("checkpoint.memory.async", FX_MEMBER(checkpoint.memory.async),
              "buddy commits finish in the background (exchange, agreement)"),
      named<SnapshotCopier>("checkpoint.memory.copier", FX_MEMBER(checkpoint.memory.copier),
                            "who copies during_next_step members: a thread, the step end, or auto"),
      named<ExchangeProgress>("checkpoint.memory.progress", FX_MEMBER(checkpoint.memory.progress),
                              "who moves the buddy exchange on: a thread, the app's calls, or auto"),
  };
  auto add = [&keys](std::vector<ConfigKey> more) {
    for (auto& k : more) keys.push_back(std::move(k));
  };
  add(storage_level_keys(
      "checkpoint.node", FX_MEMBER(checkpoint.node),
      {"node-local storage", "node-local directory; {host} is this host's name", "", "per node directory",
       "node-local versions found but none usable: start from scratch, or stop"},
      2,
      {boolean("checkpoint.node.partner", FX_MEMBER(checkpoint.node.partner),
               "also write the buddy copy this rank holds")}));
  add(storage_level_keys("checkpoint.hdf5", FX_MEMBER(checkpoint.hdf5),
                         {"disk", "one file per rank per version", "FX_CHECKPOINT_DIR", "on disk",
                          "versions on disk but none usable: start from scratch, or stop"},
                         3,
                         {boolean("checkpoint.hdf5.restart", FX_MEMBER(checkpoint.hdf5.restart),
                                  "a new run restarts from the newest valid version")}));
  keys.push_back(number("checkpoint.mtbf_s", FX_MEMBER(checkpoint.mtbf_s), false,
                        "the job's mean time between failures, for every: auto"));
  return keys;
}

std::vector<ConfigKey> tryblock_reinit_log_report_keys() {
  std::vector<std::string> levels;
  for (int l = 0; l <= static_cast<int>(log::Level::off); ++l)
    levels.emplace_back(log::level_name(static_cast<log::Level>(l)));
  return {
      integer("tryblock.soft_retries", FX_MEMBER(tryblock.soft_retries), 0, "an integer >= 0",
              "retries of a block that reports a soft error"),
      number("tryblock.timeout_s", FX_MEMBER(tryblock.timeout_s), true, "bound on the waits inside a block"),
      boolean("tryblock.rollback", FX_MEMBER(tryblock.rollback),
              "after the retries: roll back to the last checkpoint"),
      boolean("reinit.enabled", FX_MEMBER(reinit.enabled), "global restart after a repair"),
      named<ReinitMode>("reinit.mode", FX_MEMBER(reinit.mode),
                        "act on a failure at once, or at test_failure()"),
      choice<log::Level>(
          "log.level", FX_MEMBER(log_level), levels,
          [](const std::string& t) {
            log::Level l{};
            return log::parse_level(t, l) ? std::optional<log::Level>(l) : std::nullopt;
          },
          [](log::Level l) { return log::level_name(l); }, "what is logged", "FX_LOG_LEVEL"),
      path("report.path", FX_MEMBER(report_path), "a file path", true, "where the run report is written",
           "FX_REPORT"),
  };
}

std::vector<ConfigKey> inject_keys() {
  std::vector<std::string> actions;
  for (const auto& entry : EnumNames<InjectAction>::names) actions.emplace_back(entry.second);
  auto action_of = [](const std::string& s) {
    InjectAction a{};
    return parse_action(s, a) ? std::optional<InjectAction>(a) : std::nullopt;
  };
  auto action_name = [](InjectAction a) { return to_string(a); };
  std::vector<ConfigKey> keys = {
      integer("inject.chaos.seed", FX_MEMBER(inject.chaos_seed), 0, "an integer >= 0",
              "seeds the chaos generator", "FX_CHAOS_SEED"),
      number("inject.chaos.mtbf_iterations", FX_MEMBER(inject.chaos_mtbf_iterations), true,
             "mean gap between chaos failures, in iterations", "", "a number of iterations > 0"),
      // Bounded: the whole schedule is drawn at start on every rank (10^9
      // kept every rank busy for minutes before the first step).
      integer("inject.chaos.max_failures", FX_MEMBER(inject.chaos_max_failures), 1,
              "an integer from 1 to 100000", "chaos failures drawn", "", 100000),
      integer("inject.chaos.start", FX_MEMBER(inject.chaos_start), 0, "an iteration >= 0",
              "no chaos failure before this iteration"),
      choice<InjectAction>("inject.chaos.action", FX_MEMBER(inject.chaos_action), actions, action_of,
                           action_name, "how chaos victims fail"),
      named<Phase>("inject.chaos.phase", FX_MEMBER(inject.chaos_phase), "the phase chaos failures fire in"),
  };
  for (auto& k : keys)
    if (k.path == "inject.chaos.mtbf_iterations") k.default_text = "(required)";
  return keys;
}

std::vector<ConfigKey> make_schema() {
  std::vector<ConfigKey> s;
  for (auto part :
       {spares_recovery_detector_keys, checkpoint_keys, tryblock_reinit_log_report_keys, inject_keys})
    for (auto& k : part()) s.push_back(std::move(k));
  return s;
}

#undef FX_MEMBER

bool under(const std::string& path, const std::string& section) {
  return section.empty() || (path.size() > section.size() && path.compare(0, section.size(), section) == 0 &&
                             path[section.size()] == '.');
}

void read_section(Walker& w, const YAML::Node& node, const std::string& path, Config& cfg) {
  const auto known = section_keys(path);
  w.check_keys(node, path, known);
  for (const auto& name : known) {
    const std::string key = join_key(path, name);
    const YAML::Node v = Walker::child(node, name);
    if (!v.IsDefined()) continue;
    if (const ConfigKey* k = find_key(key)) {
      k->read(w, v, key, cfg);
      w.record(v, key);
    } else if (key == "spares" && v.IsScalar()) {  // spares: S is spares: {count: S}
      find_key("spares.count")->read(w, v, key, cfg);
      w.record(v, "spares.count", key);
    } else if (key == "inject.failures") {
      read_failures(w, v, cfg.inject);
    } else if (key == "inject.chaos") {
      if (v.IsNull()) continue;
      cfg.inject.chaos = true;
      cfg.inject.chaos_origin = w.where(v, key);
      read_section(w, v, key, cfg);
      check_chaos(w, v, cfg.inject);
    } else if (key != "app") {
      read_section(w, v, key, cfg);
    }
  }
}

}  // namespace

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> schema = make_schema();
  return schema;
}

const ConfigKey* find_key(const std::string& path) {
  for (const auto& k : config_schema())
    if (k.path == path) return &k;
  return nullptr;
}

std::vector<std::string> section_keys(const std::string& path) {
  std::vector<std::string> names;
  if (path == "inject") names.emplace_back("failures");  // a list: config_inject.cpp
  for (const auto& k : config_schema()) {
    if (!under(k.path, path)) continue;
    const std::size_t from = path.empty() ? 0 : path.size() + 1;
    const std::string name = k.path.substr(from, k.path.find('.', from) - from);
    if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
  }
  if (path.empty()) names.emplace_back("app");  // the application's own section
  return names;
}

void read_tree(Walker& w, const YAML::Node& root, Config& cfg) {
  read_section(w, root, "", cfg);
  cfg.inject.buddy_distance = cfg.checkpoint.memory.buddy_distance;
  const YAML::Node app = Walker::child(root, "app");
  if (app.IsDefined() && !app.IsNull() && !app.IsMap())
    w.fail(app, "app", "a map (the application's settings)");
  cfg.app = make_section(app, w.file(), "app", w.overridden());
  if (w.cross_checks()) cross_check(w, root, cfg);
}

YAML::Node node_at(const YAML::Node& root, const std::string& path) {
  YAML::Node cur;
  cur.reset(root);
  std::stringstream in(path);
  for (std::string part; std::getline(in, part, '.');) {
    const YAML::Node next = Walker::child(cur, part);
    cur.reset(next);
  }
  return cur;
}

namespace {

// Sets the key at dotted `path` below map `n`, making the maps on the way.
void put_at(YAML::Node& n, const std::string& path, const YAML::Node& v) {
  std::stringstream in(path);
  std::vector<std::string> parts;
  for (std::string part; std::getline(in, part, '.');) parts.push_back(part);
  YAML::Node cur;
  cur.reset(n);
  for (std::size_t i = 0; i + 1 < parts.size(); ++i) {
    YAML::Node next = cur[parts[i]];
    cur.reset(next);
  }
  cur[parts.back()] = v;
}

// One entry of inject.failures, with only the keys set away from their defaults.
YAML::Node failure_to_yaml(const InjectionSpec& s) {
  YAML::Node f(YAML::NodeType::Map);
  f["target"] = target_text(s.target_kind, s.target);
  if (s.iteration >= 0) f["iteration"] = s.iteration;
  if (s.phase) f["phase"] = std::string(to_string(*s.phase));
  f["action"] = std::string(to_string(s.action));
  if (!s.member.empty()) f["member"] = s.member;
  if (s.element >= 0) f["element"] = s.element;
  if (s.bit >= 0) f["bit"] = s.bit;
  if (s.repeat != 1) f["repeat"] = s.repeat, f["every"] = s.every;
  return f;
}

}  // namespace

// The echo follows the schema; the failure list and the app section are
// not keys of it.
YAML::Node config_to_yaml(const Config& c) {
  YAML::Node n(YAML::NodeType::Map);
  for (const auto& k : config_schema()) {
    if (under(k.path, "inject")) continue;
    put_at(n, k.path, k.echo(c));
  }
  YAML::Node failures(YAML::NodeType::Sequence);
  for (const auto& s : c.inject.failures) failures.push_back(failure_to_yaml(s));
  n["inject"]["failures"] = failures;
  for (const auto& k : config_schema()) {
    if (!c.inject.chaos || !under(k.path, "inject")) continue;
    const YAML::Node v = k.echo(c);
    if (v.IsDefined()) put_at(n, k.path, v);
  }
  n["app"] = YAML::Clone(section_node(c.app));
  return n;
}

}  // namespace fx::detail
