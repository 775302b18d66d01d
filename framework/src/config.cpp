// fx configuration: a YAML file, FX_* environment variables and --fx-set
// overrides are merged into one YAML tree (file < env < command line), which
// is then walked once against the schema of docs/config.md. Every value
// remembers where it came from, so each error names file:line:column, the
// environment variable or --fx-set. Nothing here touches MPI: every rank
// reads the same inputs and reaches the same verdict.
#include <fx/config.hpp>
#include <fx/error.hpp>
#include <fx/inject.hpp>

#include <fmt/format.h>
#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "config_detail.hpp"

extern char** environ;

namespace fx {
namespace {

using detail::node_text;

constexpr long long kIntMax = std::numeric_limits<int>::max();

const std::vector<std::string> kTopKeys = {"spares", "recovery", "detector", "checkpoint", "tryblock",
                                           "reinit", "log",     "report",   "inject",     "app"};

// Environment variables with a fixed meaning; FX_CFG_A__B sets a.b.
const std::vector<std::pair<std::string, std::string>> kEnvKeys = {
    {"FX_SPARES", "spares.count"},
    {"FX_SPARE_IDLE", "spares.idle"},
    {"FX_ON_EXHAUSTED", "recovery.on_exhausted"},
    {"FX_DETECTOR_PERIOD", "detector.period_s"},
    {"FX_DETECTOR_TIMEOUT", "detector.timeout_s"},
    {"FX_CHECKPOINT_DIR", "checkpoint.hdf5.directory"},
    {"FX_LOG_LEVEL", "log.level"},
    {"FX_REPORT", "report.path"},
    {"FX_CHAOS_SEED", "inject.chaos.seed"},
};

std::string join_key(const std::string& path, const std::string& key) {
  return path.empty() ? key : path + "." + key;
}

// "a.b[2].c" -> "a.b[2]" -> "a.b" -> "a" -> "".
std::string parent_key(const std::string& path) {
  const auto cut = path.find_last_of(".[");
  return cut == std::string::npos ? "" : path.substr(0, cut);
}

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

// The schema walk over the merged tree.
class Walker {
 public:
  Walker(std::string file, const std::map<std::string, std::string>& overridden, Config& cfg,
         bool cross_checks = true)
      : file_(std::move(file)), overridden_(overridden), cfg_(cfg), cross_checks_(cross_checks) {}

  // Checks between keys; off when one source is validated on its own (a
  // later source may still change the other key).
  bool cross_checks() const { return cross_checks_; }

  // Overrides win over file marks: their nodes were parsed from a string.
  std::string where(const YAML::Node& node, const std::string& path) const {
    for (std::string p = path;; p = parent_key(p)) {
      const auto it = overridden_.find(p);
      if (it != overridden_.end()) return it->second;
      if (p.empty()) break;
    }
    return detail::mark_position(file_.empty() ? "<config>" : file_, node);
  }

  [[noreturn]] void fail(const YAML::Node& node, const std::string& path, const std::string& expected) const {
    FX_THROW(ConfigError, where(node, path), path, fmt::format("expected {}, got '{}'", expected, node_text(node)));
  }

  void record(const YAML::Node& node, const std::string& path, const std::string& shown = "") {
    cfg_.origins[path] = ConfigOrigin{where(node, path), shown.empty() ? path : shown};
  }

  // A map with only `known` keys, each once. Null counts as an empty map.
  void check_keys(const YAML::Node& map, const std::string& path, const std::vector<std::string>& known) const {
    if (map.IsNull()) return;
    if (!map.IsMap()) fail(map, path.empty() ? "document" : path, fmt::format("a map with keys {}", detail::join(known)));
    std::map<std::string, YAML::Node> seen;
    for (const auto& kv : map) {
      const YAML::Node& k = kv.first;
      const std::string name = k.IsScalar() ? k.Scalar() : node_text(k);
      const std::string key = join_key(path, name);
      if (!k.IsScalar()) fail(k, key, "a key name");
      if (std::find(known.begin(), known.end(), name) == known.end()) {
        FX_THROW(ConfigError, where(k, key), key,
                 fmt::format("expected one of {}{}, got '{}'", detail::join(known), detail::suggestion(name, known),
                             name));
      }
      const auto [it, fresh] = seen.emplace(name, k);
      if (!fresh) {
        const YAML::Mark first = it->second.Mark();
        FX_THROW(ConfigError, where(k, key), key,
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
    if (!v.IsScalar() || !detail::parse_int(v.Scalar(), x) || x < lo || x > hi) fail(v, path, expected);
    return x;
  }

  double number(const YAML::Node& v, const std::string& path, double lo, bool lo_open,
                const std::string& expected) const {
    double x = 0;
    if (!v.IsScalar() || !detail::parse_number(v.Scalar(), x) || x < lo || (lo_open && x == lo))
      fail(v, path, expected);
    return x;
  }

  bool boolean(const YAML::Node& v, const std::string& path) const {
    bool b = false;
    if (!v.IsScalar() || !detail::parse_bool(v.Scalar(), b)) fail(v, path, "true or false");
    return b;
  }

  std::string choice(const YAML::Node& v, const std::string& path, const std::vector<std::string>& names) const {
    const std::string got = v.IsScalar() ? v.Scalar() : "";
    if (v.IsScalar() && std::find(names.begin(), names.end(), got) != names.end()) return got;
    const std::string hint = v.IsScalar() && !got.empty() ? detail::suggestion(got, names) : "";
    fail(v, path, fmt::format("one of {}{}", detail::join(names), hint));
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
  void num_field(const YAML::Node& map, const std::string& path, const char* key, double& out, bool positive) {
    field(map, path, key, [&](const YAML::Node& v, const std::string& k) {
      out = number(v, k, 0.0, positive, positive ? "a number > 0" : "a number >= 0");
    });
  }
  void bool_field(const YAML::Node& map, const std::string& path, const char* key, bool& out) {
    field(map, path, key, [&](const YAML::Node& v, const std::string& k) { out = boolean(v, k); });
  }

  const std::string& file() const { return file_; }

 private:
  std::string file_;
  const std::map<std::string, std::string>& overridden_;
  Config& cfg_;
  bool cross_checks_ = true;
};

const std::vector<std::string> kActions = {"SIGKILL", "SIGTERM", "SIGSEGV", "abort", "bitflip"};

bool parse_action(std::string text, InjectAction& out) {
  std::string up = text;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up.rfind("SIG", 0) != 0 && up != "ABORT" && up != "BITFLIP") up = "SIG" + up;
  if (up == "SIGKILL") return out = InjectAction::sigkill, true;
  if (up == "SIGTERM") return out = InjectAction::sigterm, true;
  if (up == "SIGSEGV") return out = InjectAction::sigsegv, true;
  if (up == "ABORT" || up == "SIGABRT") return out = InjectAction::abort, true;
  if (up == "BITFLIP") return out = InjectAction::bitflip, true;
  return false;
}


constexpr const char* kTargetForms = "a logical rank, rank:<r>, world:<w>, spare[:<i>] or buddy-of:<r>";
constexpr const char* kActionForms = "one of SIGKILL, SIGTERM, SIGSEGV, abort, bitflip";

InjectAction read_action(Walker& w, const YAML::Node& v, const std::string& k) {
  InjectAction a{};
  if (!v.IsScalar() || !parse_action(v.Scalar(), a)) {
    const std::string hint = v.IsScalar() ? detail::suggestion(v.Scalar(), kActions) : "";
    w.fail(v, k, std::string(kActionForms) + hint);
  }
  return a;
}

void read_spec(Walker& w, const YAML::Node& m, const std::string& path, InjectionSpec& s) {
  w.check_keys(m, path, {"target", "iteration", "phase", "action", "member", "repeat", "every", "element", "bit"});
  if (!m.IsMap()) w.fail(m, path, "a map with a target and a trigger");
  s.key = path;
  const YAML::Node t = Walker::child(m, "target");
  if (!t.IsDefined()) w.fail(m, path, "a target (" + std::string(kTargetForms) + ")");
  if (!t.IsScalar() || !detail::parse_target(t.Scalar(), s.target_kind, s.target))
    w.fail(t, path + ".target", kTargetForms);
  s.origin = w.where(t, path + ".target");
  w.record(t, path + ".target");
  w.field(m, path, "iteration", [&](const YAML::Node& v, const std::string& k) {
    s.iteration = w.integer(v, k, 0, std::numeric_limits<long long>::max(), "an iteration >= 0");
  });
  const auto phases = phase_names();
  w.field(m, path, "phase", [&](const YAML::Node& v, const std::string& k) { s.phase = w.choice(v, k, phases); });
  w.field(m, path, "action", [&](const YAML::Node& v, const std::string& k) { s.action = read_action(w, v, k); });
  w.field(m, path, "member", [&](const YAML::Node& v, const std::string& k) {
    s.member = w.scalar(v, k, "the name of a registered member");
    if (s.member.empty()) w.fail(v, k, "the name of a registered member");
  });
  w.int_field(m, path, "repeat", s.repeat, 1, "an integer >= 1");
  w.field(m, path, "every", [&](const YAML::Node& v, const std::string& k) {
    s.every = w.integer(v, k, 1, std::numeric_limits<int>::max(), "an integer >= 1");
  });
  w.field(m, path, "element", [&](const YAML::Node& v, const std::string& k) {
    s.element = w.integer(v, k, 0, std::numeric_limits<long long>::max(), "an element index >= 0");
  });
  w.int_field(m, path, "bit", s.bit, 0, "a bit index >= 0");

  // Contradictions within one spec.
  if (s.iteration < 0 && s.phase.empty()) w.fail(m, path, "an iteration or a phase trigger");
  const bool bitflip = s.action == InjectAction::bitflip;
  if (bitflip && s.member.empty()) {
    FX_THROW(ConfigError, w.where(Walker::child(m, "action"), path + ".action"), path + ".member",
             "expected the name of a registered member for bitflip, got ''");
  }
  if (!bitflip && !s.member.empty())
    w.fail(Walker::child(m, "member"), path + ".member",
           fmt::format("no member for action {} (only bitflip corrupts data)", action_name(s.action)));
  if (!bitflip && (s.element >= 0 || s.bit >= 0)) {
    const char* key = s.element >= 0 ? "element" : "bit";
    w.fail(Walker::child(m, key), join_key(path, key),
           fmt::format("no {} for action {} (only bitflip corrupts data)", key, action_name(s.action)));
  }
  if (bitflip && s.target_kind == "spare") w.fail(t, path + ".target", "an active rank for bitflip (spares hold no data)");
  if (s.target_kind == "spare" && !s.phase.empty() && s.phase != "spare-idle" && s.phase != "repair" &&
      s.phase != "finalize")
    w.fail(Walker::child(m, "phase"), path + ".phase",
           "a phase a spare goes through (spare-idle, repair or finalize)");
  if (s.target_kind == "spare" && s.iteration >= 0)
    w.fail(Walker::child(m, "iteration"), path + ".iteration",
           "no iteration for a spare target (idle spares do not count iterations; use a phase)");
  if (s.target_kind != "spare" && s.target_kind != "world" && s.phase == "spare-idle")
    w.fail(Walker::child(m, "phase"), path + ".phase", "a phase an active rank goes through (only spares idle)");
}

void read_inject(Walker& w, const YAML::Node& node, InjectConfig& inj) {
  w.check_keys(node, "inject", {"failures", "chaos"});
  const YAML::Node failures = Walker::child(node, "failures");
  if (failures.IsDefined() && !failures.IsNull()) {
    if (!failures.IsSequence()) w.fail(failures, "inject.failures", "a list of failures");
    std::size_t i = 0;
    for (const auto& item : failures) {
      InjectionSpec s;
      read_spec(w, item, fmt::format("inject.failures[{}]", i++), s);
      inj.failures.push_back(std::move(s));
    }
  }
  const YAML::Node chaos = Walker::child(node, "chaos");
  if (!chaos.IsDefined() || chaos.IsNull()) return;
  w.check_keys(chaos, "inject.chaos", {"seed", "mtbf_iterations", "max_failures", "start", "action", "phase"});
  inj.chaos = true;
  inj.chaos_origin = w.where(chaos, "inject.chaos");
  w.field(chaos, "inject.chaos", "seed", [&](const YAML::Node& v, const std::string& k) {
    if (!v.IsScalar() || !detail::parse_uint(v.Scalar(), inj.chaos_seed)) w.fail(v, k, "an integer >= 0");
  });
  if (!w.field(chaos, "inject.chaos", "mtbf_iterations", [&](const YAML::Node& v, const std::string& k) {
        inj.chaos_mtbf_iterations = w.number(v, k, 0.0, true, "a number of iterations > 0");
      }))
    w.fail(chaos, "inject.chaos.mtbf_iterations", "a number of iterations > 0");
  w.int_field(chaos, "inject.chaos", "max_failures", inj.chaos_max_failures, 1, "an integer >= 1");
  w.field(chaos, "inject.chaos", "start", [&](const YAML::Node& v, const std::string& k) {
    inj.chaos_start = w.integer(v, k, 0, std::numeric_limits<long long>::max(), "an iteration >= 0");
  });
  w.field(chaos, "inject.chaos", "action", [&](const YAML::Node& v, const std::string& k) {
    inj.chaos_action = read_action(w, v, k);
    if (inj.chaos_action == InjectAction::bitflip) w.fail(v, k, "one of SIGKILL, SIGTERM, SIGSEGV, abort");
  });
  const auto phases = phase_names();
  w.field(chaos, "inject.chaos", "phase", [&](const YAML::Node& v, const std::string& k) {
    inj.chaos_phase = w.choice(v, k, phases);
    if (inj.chaos_phase == "spare-idle") w.fail(v, k, "a phase an active rank goes through (only spares idle)");
  });
}

void read_tree(Walker& w, const YAML::Node& root, Config& cfg) {
  w.check_keys(root, "", kTopKeys);
  if (root.IsNull()) return;

  // spares: S  or  spares: {count, idle, poll_interval_ms, placement}
  const YAML::Node spares = Walker::child(root, "spares");
  if (spares.IsDefined() && spares.IsScalar()) {
    cfg.spares.count = static_cast<int>(w.integer(spares, "spares", 0, kIntMax, "a number of spares >= 0"));
    w.record(spares, "spares.count", "spares");
  } else if (spares.IsDefined()) {
    w.check_keys(spares, "spares", {"count", "idle", "poll_interval_ms", "placement"});
    w.int_field(spares, "spares", "count", cfg.spares.count, 0, "a number of spares >= 0");
    w.field(spares, "spares", "idle", [&](const YAML::Node& v, const std::string& k) {
      const auto s = w.choice(v, k, {"block", "yield", "sleep"});
      cfg.spares.idle = s == "block" ? SpareIdle::block : s == "yield" ? SpareIdle::yield : SpareIdle::sleep;
    });
    w.num_field(spares, "spares", "poll_interval_ms", cfg.spares.poll_interval_ms, true);
    w.field(spares, "spares", "placement", [&](const YAML::Node& v, const std::string& k) {
      cfg.spares.placement = w.choice(v, k, {"last", "spread"}) == "last" ? SparePlacement::last : SparePlacement::spread;
    });
  }

  const YAML::Node rec = Walker::child(root, "recovery");
  if (rec.IsDefined()) {
    w.check_keys(rec, "recovery", {"on_exhausted", "max_rounds", "timeout_s", "max_failures", "on_lost_checkpoint"});
    w.field(rec, "recovery", "on_lost_checkpoint", [&](const YAML::Node& v, const std::string& k) {
      cfg.recovery.on_lost_checkpoint =
          w.choice(v, k, {"stop", "restart"}) == "stop" ? LostCheckpointPolicy::stop : LostCheckpointPolicy::restart;
    });
    w.field(rec, "recovery", "on_exhausted", [&](const YAML::Node& v, const std::string& k) {
      cfg.recovery.on_exhausted =
          w.choice(v, k, {"abort", "shrink"}) == "abort" ? ExhaustedPolicy::abort : ExhaustedPolicy::shrink;
    });
    w.int_field(rec, "recovery", "max_rounds", cfg.recovery.max_rounds, 1, "an integer >= 1");
    w.num_field(rec, "recovery", "timeout_s", cfg.recovery.timeout_s, true);
    w.int_field(rec, "recovery", "max_failures", cfg.recovery.max_failures, 0, "an integer >= 0");
  }

  const YAML::Node det = Walker::child(root, "detector");
  if (det.IsDefined()) {
    w.check_keys(det, "detector", {"period_s", "timeout_s"});
    w.num_field(det, "detector", "period_s", cfg.detector.period_s, false);
    w.num_field(det, "detector", "timeout_s", cfg.detector.timeout_s, false);
    if (w.cross_checks() && cfg.detector.period_s == 0 && cfg.detector.timeout_s > 0)
      w.fail(Walker::child(det, "timeout_s"), "detector.timeout_s",
             "0 when detector.period_s is 0 (the heartbeat detector is off)");
    if (w.cross_checks() && cfg.detector.period_s > 0 && cfg.detector.timeout_s > 0 &&
        cfg.detector.timeout_s <= cfg.detector.period_s)
      w.fail(Walker::child(det, "timeout_s"), "detector.timeout_s",
             fmt::format("a timeout longer than detector.period_s ({})", cfg.detector.period_s));
  }

  const YAML::Node ck = Walker::child(root, "checkpoint");
  if (ck.IsDefined()) {
    w.check_keys(ck, "checkpoint", {"memory", "hdf5"});
    const YAML::Node mem = Walker::child(ck, "memory");
    auto& m = cfg.checkpoint.memory;
    if (mem.IsDefined()) {
      const std::string p = "checkpoint.memory";
      w.check_keys(mem, p, {"every", "buddy_distance", "scheme", "parity_group", "depth"});
      w.int_field(mem, p, "every", m.every, 0, "an interval >= 0 (0: off)");
      w.int_field(mem, p, "buddy_distance", m.buddy_distance, 1, "a distance >= 1");
      w.field(mem, p, "scheme", [&](const YAML::Node& v, const std::string& k) {
        m.scheme = w.choice(v, k, {"buddy", "parity"});
      });
      w.int_field(mem, p, "parity_group", m.parity_group, 2, "a group size >= 2");
      w.int_field(mem, p, "depth", m.depth, 1, "a number of versions >= 1");
    }
    const YAML::Node h5 = Walker::child(ck, "hdf5");
    auto& h = cfg.checkpoint.hdf5;
    if (h5.IsDefined()) {
      const std::string p = "checkpoint.hdf5";
      w.check_keys(h5, p, {"every", "directory", "keep", "restart", "on_unusable"});
      w.int_field(h5, p, "every", h.every, 0, "an interval >= 0 (0: off)");
      w.field(h5, p, "directory", [&](const YAML::Node& v, const std::string& k) {
        h.directory = w.scalar(v, k, "a directory path");
        if (h.directory.empty()) w.fail(v, k, "a directory path");
      });
      w.int_field(h5, p, "keep", h.keep, 1, "a number of versions >= 1");
      w.bool_field(h5, p, "restart", h.restart);
      w.field(h5, p, "on_unusable", [&](const YAML::Node& v, const std::string& k) {
        h.on_unusable = w.choice(v, k, {"fresh", "stop"});
      });
      if (w.cross_checks() && h.every > 0 && m.every == 0)
        w.fail(Walker::child(h5, "every"), "checkpoint.hdf5.every",
               "0 when checkpoint.memory.every is 0 (HDF5 takes every m-th memory checkpoint)");
    }
  }

  const YAML::Node tb = Walker::child(root, "tryblock");
  if (tb.IsDefined()) {
    w.check_keys(tb, "tryblock", {"soft_retries", "timeout_s", "rollback"});
    w.int_field(tb, "tryblock", "soft_retries", cfg.tryblock.soft_retries, 0, "an integer >= 0");
    w.num_field(tb, "tryblock", "timeout_s", cfg.tryblock.timeout_s, true);
    w.bool_field(tb, "tryblock", "rollback", cfg.tryblock.rollback);
  }

  const YAML::Node ri = Walker::child(root, "reinit");
  if (ri.IsDefined()) {
    w.check_keys(ri, "reinit", {"enabled", "mode"});
    w.bool_field(ri, "reinit", "enabled", cfg.reinit.enabled);
    w.field(ri, "reinit", "mode", [&](const YAML::Node& v, const std::string& k) {
      cfg.reinit.mode = w.choice(v, k, {"async", "sync"});
    });
    if (w.cross_checks() && cfg.reinit.enabled && cfg.recovery.on_exhausted == ExhaustedPolicy::shrink)
      w.fail(Walker::child(ri, "enabled"), "reinit.enabled",
             "false when recovery.on_exhausted is shrink (Reinit restarts at the same size)");
  }

  const YAML::Node lg = Walker::child(root, "log");
  if (lg.IsDefined()) {
    w.check_keys(lg, "log", {"level"});
    w.field(lg, "log", "level", [&](const YAML::Node& v, const std::string& k) {
      const std::string s = w.choice(v, k, {"trace", "debug", "info", "warn", "error", "off"});
      log::parse_level(s, cfg.log_level);
    });
  }

  const YAML::Node rp = Walker::child(root, "report");
  if (rp.IsDefined()) {
    w.check_keys(rp, "report", {"path"});
    w.field(rp, "report", "path", [&](const YAML::Node& v, const std::string& k) {
      cfg.report_path = v.IsNull() ? "" : w.scalar(v, k, "a file path");
    });
  }

  const YAML::Node inj = Walker::child(root, "inject");
  if (inj.IsDefined()) read_inject(w, inj, cfg.inject);
  cfg.inject.buddy_distance = cfg.checkpoint.memory.buddy_distance;

  const YAML::Node app = Walker::child(root, "app");
  if (app.IsDefined() && !app.IsNull() && !app.IsMap()) w.fail(app, "app", "a map (the application's settings)");
  // Shared, not cloned: a clone would lose the marks apps need for errors.
  cfg.app.reset(app.IsDefined() && !app.IsNull() ? app : YAML::Node(YAML::NodeType::Map));
}

// The places fx writes to must be writable before any MPI work starts.
void check_paths(const Config& cfg) {
  if (!cfg.report_path.empty()) {
    const std::string why = detail::unwritable_reason(cfg.report_path, false);
    if (!why.empty()) {
      const auto o = cfg.origin_of("report.path");
      FX_THROW(ConfigError, o.position, o.key,
               fmt::format("expected a writable file path, got '{}' ({})", cfg.report_path, why));
    }
  }
  if (cfg.checkpoint.hdf5.every > 0) {
    const auto& dir = cfg.checkpoint.hdf5.directory;
    const std::string why = detail::unwritable_reason(dir, true);
    if (!why.empty()) {
      const auto o = cfg.origin_of("checkpoint.hdf5.directory");
      FX_THROW(ConfigError, o.position, o.key, fmt::format("expected a writable directory, got '{}' ({})", dir, why));
    }
  }
}

// FX_INJECT: failures separated by ';', each either the short form
// TARGET@WHEN[:ACTION] (WHEN: an iteration, a phase, or ITERATION/PHASE) or
// key=value pairs separated by ',' with the YAML keys.
YAML::Node parse_inject_env(const std::string& text) {
  YAML::Node seq(YAML::NodeType::Sequence);
  // '|' separates specs too, for places where ';' is special (CMake lists).
  std::string normalized = text;
  std::replace(normalized.begin(), normalized.end(), '|', ';');
  std::stringstream in(normalized);
  std::size_t i = 0;
  auto trim = [](std::string s) {
    const auto a = s.find_first_not_of(" \t");
    const auto b = s.find_last_not_of(" \t");
    return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
  };
  for (std::string item; std::getline(in, item, ';');) {
    item = trim(item);
    if (item.empty()) continue;
    const std::string key = fmt::format("inject.failures[{}]", i++);
    YAML::Node spec(YAML::NodeType::Map);
    const auto at = item.find('@');
    if (item.find('=') == std::string::npos && at != std::string::npos) {
      spec["target"] = trim(item.substr(0, at));
      std::string when = item.substr(at + 1);
      const auto colon = when.find(':');
      if (colon != std::string::npos) {
        spec["action"] = trim(when.substr(colon + 1));
        when = when.substr(0, colon);
      }
      std::stringstream parts(when);
      for (std::string part; std::getline(parts, part, '/');) {
        part = trim(part);
        long long n = 0;
        if (detail::parse_int(part, n)) spec["iteration"] = part;
        else if (!part.empty()) spec["phase"] = part;
      }
    } else {
      std::stringstream fields(item);
      for (std::string f; std::getline(fields, f, ',');) {
        const auto eq = f.find('=');
        if (eq == std::string::npos || trim(f.substr(0, eq)).empty())
          FX_THROW(ConfigError, "env FX_INJECT", key,
                   fmt::format("expected TARGET@WHEN[:ACTION] or key=value,... got '{}'", item));
        spec[trim(f.substr(0, eq))] = trim(f.substr(eq + 1));
      }
    }
    seq.push_back(spec);
  }
  return seq;
}

// Sets root[a][b][c] = value, creating maps; returns the keys it created.
void set_key(YAML::Node root, const Override& o, std::map<std::string, std::string>& overridden) {
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
    FX_THROW(ConfigError, origin, file, fmt::format("expected a readable YAML file, got '{}' ({})", file, why));
  };
  struct stat st {};
  if (::stat(file.c_str(), &st) != 0) reject(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) reject("a directory");
  if (!S_ISREG(st.st_mode)) reject(S_ISFIFO(st.st_mode) ? "a FIFO" : "not a regular file");
  if (static_cast<std::uintmax_t>(st.st_size) > kMaxBytes) {
    reject(fmt::format("{} bytes, more than the {} MiB a configuration may have", st.st_size, kMaxBytes >> 20));
  }
  std::ifstream in(file, std::ios::binary);
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  if (!in || !in.read(text.data(), static_cast<std::streamsize>(text.size()))) reject(std::strerror(errno));
  return text;
}

Config load(const std::string& file, const std::string& file_origin, const std::vector<Override>& env,
            const std::vector<Override>& sets) {
  Config cfg;
  cfg.source = file;
  YAML::Node root(YAML::NodeType::Map);
  if (!file.empty()) {
    const std::string text = read_config_file(file, file_origin);
    try {
      std::vector<YAML::Node> docs = YAML::LoadAll(text);
      if (docs.size() > 1) {
        FX_THROW(ConfigError, detail::mark_position(file, docs[1]), "document",
                 fmt::format("expected one YAML document, got {}", docs.size()));
      }
      if (!docs.empty() && !docs[0].IsNull()) root = docs[0];
    } catch (const YAML::Exception& e) {
      FX_THROW(ConfigError, fmt::format("{}:{}:{}", file, e.mark.line + 1, e.mark.column + 1), "yaml",
               fmt::format("expected valid YAML, got '{}'", e.msg));
    }
    if (!root.IsMap()) {
      FX_THROW(ConfigError, detail::mark_position(file, root), "document",
               fmt::format("expected a map of sections ({}), got '{}'", detail::join(kTopKeys), node_text(root)));
    }
  }

  // The launcher's FX_SPARES wins over the file; say so when they differ.
  std::string file_spares;
  {
    const YAML::Node s = root["spares"];
    if (s.IsDefined() && s.IsScalar()) file_spares = s.Scalar();
    if (s.IsDefined() && s.IsMap() && s["count"].IsDefined() && s["count"].IsScalar())
      file_spares = s["count"].Scalar();
  }

  // Every source is validated, not only the one that wins: a bad value in
  // the file is an error even when the environment overrides it.
  if (!file.empty() && !(env.empty() && sets.empty())) {
    Config file_only;
    Walker fw(file, {}, file_only, /*cross_checks=*/false);
    read_tree(fw, root, file_only);
  }

  std::map<std::string, std::string> overridden;
  for (const auto* layer : {&env, &sets}) {
    for (const auto& o : *layer) {
      if ((o.key == "spares.count" || o.key == "spares") && !file_spares.empty() && o.value.IsScalar() && o.value.Scalar() != file_spares) {
        cfg.notes.push_back(fmt::format("{}={} overrides spares: {} from {}", o.position, o.value.Scalar(),
                                        file_spares, file));
      }
      set_key(root, o, overridden);
    }
  }

  Walker w(file, overridden, cfg);
  read_tree(w, root, cfg);
  // Apps look their keys up later (config_get): keep where overrides came from.
  for (const auto& [key, position] : overridden)
    if (key == "app" || key.rfind("app.", 0) == 0) cfg.origins[key] = ConfigOrigin{position, key};
  check_paths(cfg);
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
        if (name.compare(i, 2, "__") == 0) key += '.', ++i;
        else key += static_cast<char>(std::tolower(static_cast<unsigned char>(name[i])));
      }
      if (!valid_key(key)) {
        FX_THROW(ConfigError, pos, key.empty() ? name : key,
                 fmt::format("expected FX_CFG_<SECTION>__<KEY>=value, got '{}'", entry));
      }
      out.push_back({key, YAML::Node(value), pos});
    } else {
      for (const auto& [var, key] : kEnvKeys)
        if (var == name) out.push_back({key, YAML::Node(value), pos});
    }
  }
  return out;
}

Override parse_set(const std::string& text) {
  const auto eq = text.find('=');
  const std::string key = eq == std::string::npos ? text : text.substr(0, eq);
  if (eq == std::string::npos || !valid_key(key)) {
    FX_THROW(ConfigError, "--fx-set", key.empty() ? "<key>" : key,
             fmt::format("expected key=value with a dotted key (e.g. checkpoint.memory.every=10), got '{}'", text));
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

std::string_view action_name(InjectAction action) {
  switch (action) {
    case InjectAction::sigkill: return "SIGKILL";
    case InjectAction::sigterm: return "SIGTERM";
    case InjectAction::sigsegv: return "SIGSEGV";
    case InjectAction::abort: return "abort";
    case InjectAction::bitflip: return "bitflip";
  }
  return "?";
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
  return load(path, origin, env_overrides(env), set_overrides);
}

Config load_config(int& argc, char** argv) {
  std::string file;
  std::vector<std::string> sets;
  int out = argc > 0 ? 1 : 0;
  for (int i = out; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const char* flag, std::string& into) {
      const std::string f = flag;
      if (arg == f) {
        if (i + 1 >= argc)
          FX_THROW(ConfigError, f, f == "--fx-set" ? "<key>" : "<file>",
                   fmt::format("expected {} after {}, got ''", f == "--fx-set" ? "key=value" : "a file", f));
        into = argv[++i];
        return true;
      }
      if (arg.rfind(f + "=", 0) == 0) {
        into = arg.substr(f.size() + 1);
        return true;
      }
      return false;
    };
    std::string v;
    if (value("--fx-config", v)) {
      if (!file.empty())
        FX_THROW(ConfigError, "--fx-config", v, fmt::format("expected one configuration file, got '{}' after '{}'", v, file));
      file = v;
    } else if (value("--fx-set", v)) {
      sets.push_back(v);
    } else {
      argv[out++] = argv[i];
    }
  }
  if (out < argc) argv[out] = nullptr;
  argc = out;
  std::vector<std::string> env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e)
    if (std::strncmp(*e, "FX_", 3) == 0) env.emplace_back(*e);
  return load_config(file, env, sets);
}

void validate_against_world(const Config& cfg, int world_size) {
  const int spares = cfg.spares.count;
  if (spares >= world_size) {
    const auto o = cfg.origin_of("spares.count");
    FX_THROW(ConfigError, o.position, o.key,
             fmt::format("expected fewer spares than the job's {} processes (at least one active rank), got '{}'",
                         world_size, spares));
  }
  const int active = world_size - spares;
  const auto& mem = cfg.checkpoint.memory;
  if (mem.every > 0 && active > 1 && mem.buddy_distance % active == 0) {
    const auto o = cfg.origin_of("checkpoint.memory.buddy_distance");
    FX_THROW(ConfigError, o.position, o.key,
             fmt::format("expected a distance that is not a multiple of the {} active ranks (a rank would be its own "
                         "buddy), got '{}'",
                         active, mem.buddy_distance));
  }
  if (mem.every > 0 && mem.scheme == "parity" && mem.parity_group > active) {
    const auto o = cfg.origin_of("checkpoint.memory.parity_group");
    FX_THROW(ConfigError, o.position, o.key,
             fmt::format("expected at most the {} active ranks, got '{}'", active, mem.parity_group));
  }
  for (const auto& s : cfg.inject.failures) {
    const std::string key = s.key + ".target";
    const std::string got = detail::target_text(s.target_kind, s.target);
    std::string expected;
    if ((s.target_kind == "rank" || s.target_kind == "buddy-of") && s.target >= active)
      expected = fmt::format("a logical rank below {} (the active ranks)", active);
    else if (s.target_kind == "world" && s.target >= world_size)
      expected = fmt::format("a world rank below {} (the job's processes)", world_size);
    else if (s.target_kind == "spare" && spares == 0)
      expected = "a target that exists (the job has no spares)";
    else if (s.target_kind == "spare" && s.target >= spares)
      expected = fmt::format("a spare index below {} (the job's spares)", spares);
    else if (s.target_kind == "world" && s.target >= active && s.action == InjectAction::bitflip)
      expected = fmt::format("an active rank for bitflip (world ranks {}.. are spares)", active);
    if (!expected.empty())
      FX_THROW(ConfigError, s.origin, key, fmt::format("expected {}, got '{}'", expected, got));
  }
}

YAML::Node config_to_yaml(const Config& c) {
  YAML::Node n(YAML::NodeType::Map);
  auto idle = [](SpareIdle i) { return i == SpareIdle::block ? "block" : i == SpareIdle::yield ? "yield" : "sleep"; };
  n["spares"]["count"] = c.spares.count;
  n["spares"]["idle"] = idle(c.spares.idle);
  n["spares"]["poll_interval_ms"] = c.spares.poll_interval_ms;
  n["spares"]["placement"] = c.spares.placement == SparePlacement::last ? "last" : "spread";
  n["recovery"]["on_exhausted"] = c.recovery.on_exhausted == ExhaustedPolicy::abort ? "abort" : "shrink";
  n["recovery"]["on_lost_checkpoint"] =
      c.recovery.on_lost_checkpoint == LostCheckpointPolicy::stop ? "stop" : "restart";
  n["recovery"]["max_rounds"] = c.recovery.max_rounds;
  n["recovery"]["timeout_s"] = c.recovery.timeout_s;
  n["recovery"]["max_failures"] = c.recovery.max_failures;
  n["detector"]["period_s"] = c.detector.period_s;
  n["detector"]["timeout_s"] = c.detector.timeout_s;
  const auto& m = c.checkpoint.memory;
  n["checkpoint"]["memory"]["every"] = m.every;
  n["checkpoint"]["memory"]["buddy_distance"] = m.buddy_distance;
  n["checkpoint"]["memory"]["scheme"] = m.scheme;
  n["checkpoint"]["memory"]["parity_group"] = m.parity_group;
  n["checkpoint"]["memory"]["depth"] = m.depth;
  const auto& h = c.checkpoint.hdf5;
  n["checkpoint"]["hdf5"]["every"] = h.every;
  n["checkpoint"]["hdf5"]["directory"] = h.directory;
  n["checkpoint"]["hdf5"]["keep"] = h.keep;
  n["checkpoint"]["hdf5"]["restart"] = h.restart;
  n["checkpoint"]["hdf5"]["on_unusable"] = h.on_unusable;
  n["tryblock"]["soft_retries"] = c.tryblock.soft_retries;
  n["tryblock"]["timeout_s"] = c.tryblock.timeout_s;
  n["tryblock"]["rollback"] = c.tryblock.rollback;
  n["reinit"]["enabled"] = c.reinit.enabled;
  n["reinit"]["mode"] = c.reinit.mode;
  n["log"]["level"] = std::string(log::level_name(c.log_level));
  n["report"]["path"] = c.report_path;
  YAML::Node failures(YAML::NodeType::Sequence);
  for (const auto& s : c.inject.failures) {
    YAML::Node f(YAML::NodeType::Map);
    f["target"] = detail::target_text(s.target_kind, s.target);
    if (s.iteration >= 0) f["iteration"] = s.iteration;
    if (!s.phase.empty()) f["phase"] = s.phase;
    f["action"] = std::string(action_name(s.action));
    if (!s.member.empty()) f["member"] = s.member;
    if (s.element >= 0) f["element"] = s.element;
    if (s.bit >= 0) f["bit"] = s.bit;
    if (s.repeat != 1) f["repeat"] = s.repeat, f["every"] = s.every;
    failures.push_back(f);
  }
  n["inject"]["failures"] = failures;
  if (c.inject.chaos) {
    YAML::Node ch(YAML::NodeType::Map);
    ch["seed"] = c.inject.chaos_seed;
    ch["mtbf_iterations"] = c.inject.chaos_mtbf_iterations;
    ch["max_failures"] = c.inject.chaos_max_failures;
    ch["start"] = c.inject.chaos_start;
    ch["action"] = std::string(action_name(c.inject.chaos_action));
    if (!c.inject.chaos_phase.empty()) ch["phase"] = c.inject.chaos_phase;
    n["inject"]["chaos"] = ch;
  }
  n["app"] = c.app.IsDefined() ? YAML::Clone(c.app) : YAML::Node(YAML::NodeType::Map);
  return n;
}

// ---- typed lookup for applications --------------------------------------

namespace {

std::string app_position(const YAML::Node& node, const std::string& origin) {
  // Nodes set with --fx-set carry marks of their own little string: no file.
  if (origin.rfind("--fx-set", 0) == 0 || origin.rfind("env ", 0) == 0) return origin;
  return detail::mark_position(origin.empty() ? "<config>" : origin, node);
}

[[noreturn]] void app_fail(const YAML::Node& v, const std::string& key, const std::string& expected,
                           const std::string& origin) {
  FX_THROW(ConfigError, app_position(v, origin), key, fmt::format("expected {}, got '{}'", expected, node_text(v)));
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

#define FX_CONFIG_GET(T)                                                                                      \
  template T config_get<T>(const YAML::Node&, const std::string&, const T&, const std::string&,               \
                           const std::string&);                                                               \
  template T config_get<T>(const YAML::Node&, const std::string&, const T&, const Config&, const std::string&);
FX_CONFIG_GET(bool)
FX_CONFIG_GET(int)
FX_CONFIG_GET(std::int64_t)
FX_CONFIG_GET(std::uint64_t)
FX_CONFIG_GET(double)
FX_CONFIG_GET(std::string)
#undef FX_CONFIG_GET

void config_check_keys(const YAML::Node& section, const std::vector<std::string>& known, const std::string& origin,
                       const std::string& prefix) {
  if (!section.IsDefined() || section.IsNull()) return;
  if (!section.IsMap()) app_fail(section, prefix, "a map", origin);
  for (const auto& kv : section) {
    const std::string name = kv.first.IsScalar() ? kv.first.Scalar() : node_text(kv.first);
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      FX_THROW(ConfigError, app_position(kv.first, origin), join_key(prefix, name),
               fmt::format("expected one of {}{}, got '{}'", detail::join(known), detail::suggestion(name, known),
                           name));
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
             fmt::format("expected one of {}{}, got '{}'", detail::join(known), detail::suggestion(name, known), name));
  }
}

void config_reject(const YAML::Node& section, const std::string& key, const std::string& expected,
                   const std::string& origin, const std::string& prefix) {
  const YAML::Node v = section.IsMap() ? section[key] : YAML::Node(YAML::NodeType::Undefined);
  app_fail(v.IsDefined() ? v : section, join_key(prefix, key), expected, origin);
}

}  // namespace fx
