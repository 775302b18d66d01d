// Failure injection specs (inject.failures, FX_INJECT's compact form) and
// the checks on the chaos section: lists and contradictions within one
// spec, which the one-key schema does not express.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <limits>
#include <sstream>

#include "config_schema.hpp"

namespace fx::detail {
namespace {

std::vector<std::string> phase_names() {
  std::vector<std::string> names;
  for (const auto& entry : EnumNames<Phase>::names) names.emplace_back(entry.second);
  return names;
}

std::vector<std::string> action_names() {
  std::vector<std::string> names;
  for (const auto& entry : EnumNames<InjectAction>::names) names.emplace_back(entry.second);
  return names;
}

}  // namespace

bool parse_action(const std::string& text, InjectAction& out) {
  std::string up = text;
  std::transform(up.begin(), up.end(), up.begin(), [](unsigned char c) { return std::toupper(c); });
  if (up.rfind("SIG", 0) != 0 && up != "ABORT" && up != "BITFLIP") up = "SIG" + up;
  if (up == "SIGKILL") return out = InjectAction::sigkill, true;
  if (up == "SIGTERM") return out = InjectAction::sigterm, true;
  if (up == "SIGSEGV") return out = InjectAction::sigsegv, true;
  if (up == "SIGSTOP") return out = InjectAction::sigstop, true;
  if (up == "ABORT" || up == "SIGABRT") return out = InjectAction::abort, true;
  if (up == "BITFLIP") return out = InjectAction::bitflip, true;
  return false;
}

namespace {

constexpr const char* kTargetForms = "a logical rank, rank:<r>, world:<w>, spare[:<i>] or buddy-of:<r>";

InjectAction read_action(Walker& w, const YAML::Node& v, const std::string& k) {
  InjectAction a{};
  // Signals have more spellings than their names; the names give the error.
  if (!v.IsScalar() || !parse_action(v.Scalar(), a)) parse_action(w.choice(v, k, action_names()), a);
  return a;
}

// The spec's target (returned: its node, for later messages).
YAML::Node read_target(Walker& w, const YAML::Node& m, const std::string& path, InjectionSpec& s) {
  const YAML::Node t = Walker::child(m, "target");
  if (!t.IsDefined()) w.fail(m, path, "a target (" + std::string(kTargetForms) + ")");
  if (!t.IsScalar() || !parse_target(t.Scalar(), s.target_kind, s.target))
    w.fail(t, path + ".target", kTargetForms);
  s.origin = w.where(t, path + ".target");
  w.record(t, path + ".target");
  return t;
}

// The spec's trigger, action and the keys that shape them.
void read_spec_fields(Walker& w, const YAML::Node& m, const std::string& path, InjectionSpec& s) {
  w.field(m, path, "iteration", [&](const YAML::Node& v, const std::string& k) {
    s.iteration = w.integer(v, k, 0, std::numeric_limits<long long>::max(),
                            "an iteration from 0 to 9223372036854775807");
  });
  w.field(m, path, "phase", [&](const YAML::Node& v, const std::string& k) {
    s.phase = from_string<Phase>(w.choice(v, k, phase_names()));
  });
  w.field(m, path, "action",
          [&](const YAML::Node& v, const std::string& k) { s.action = read_action(w, v, k); });
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
  w.int_field(m, path, "attempt", s.attempt, 1, "a launch attempt >= 1");
}

// member, element and bit go with bitflip, and bitflip needs a member.
void check_bitflip_keys(Walker& w, const YAML::Node& m, const std::string& path, const InjectionSpec& s) {
  const bool bitflip = s.action == InjectAction::bitflip;
  if (bitflip && s.member.empty()) {
    FX_THROW(ConfigError, w.where(Walker::child(m, "action"), path + ".action"), path + ".member",
             "expected the name of a registered member for bitflip, got ''");
  }
  if (!bitflip && !s.member.empty())
    w.fail(Walker::child(m, "member"), path + ".member",
           fmt::format("no member for action {} (only bitflip corrupts data)", to_string(s.action)));
  if (!bitflip && (s.element >= 0 || s.bit >= 0)) {
    const char* key = s.element >= 0 ? "element" : "bit";
    w.fail(Walker::child(m, key), join_key(path, key),
           fmt::format("no {} for action {} (only bitflip corrupts data)", key, to_string(s.action)));
  }
}

// Before start-up's collectives no process has a role yet, nor counts.
void check_start_phase(Walker& w, const YAML::Node& m, const YAML::Node& t, const std::string& path,
                       const InjectionSpec& s) {
  if (s.phase != Phase::start) return;
  if (s.target_kind != TargetKind::world)
    w.fail(t, path + ".target", "a world:<w> target for phase start (roles are given during start-up)");
  if (s.iteration >= 0)
    w.fail(Walker::child(m, "iteration"), path + ".iteration",
           "no iteration for phase start (it comes before the first step)");
}

// A spare holds no data, counts no iterations and goes through only some
// phases; only a spare idles.
void check_target_phases(Walker& w, const YAML::Node& m, const YAML::Node& t, const std::string& path,
                         const InjectionSpec& s) {
  check_start_phase(w, m, t, path, s);
  const bool bitflip = s.action == InjectAction::bitflip;
  const bool spare = s.target_kind == TargetKind::spare;
  if (bitflip && spare) w.fail(t, path + ".target", "an active rank for bitflip (spares hold no data)");
  if (spare && s.phase && *s.phase != Phase::spare_idle && *s.phase != Phase::repair &&
      *s.phase != Phase::repair_rebuild && *s.phase != Phase::finalize)
    w.fail(Walker::child(m, "phase"), path + ".phase",
           "a phase a spare goes through (spare-idle, repair, repair-rebuild or finalize)");
  if (spare && s.iteration >= 0)
    w.fail(Walker::child(m, "iteration"), path + ".iteration",
           "no iteration for a spare target (idle spares do not count iterations; use a phase)");
  if (!spare && s.target_kind != TargetKind::world && s.phase == Phase::spare_idle)
    w.fail(Walker::child(m, "phase"), path + ".phase",
           "a phase an active rank goes through (only spares idle)");
}

void read_spec(Walker& w, const YAML::Node& m, const std::string& path, InjectionSpec& s) {
  w.check_keys(
      m, path,
      {"target", "iteration", "phase", "action", "member", "repeat", "every", "element", "bit", "attempt"});
  if (!m.IsMap()) w.fail(m, path, "a map with a target and a trigger");
  s.key = path;
  const YAML::Node t = read_target(w, m, path, s);
  read_spec_fields(w, m, path, s);

  // Contradictions within one spec.
  if (s.iteration < 0 && !s.phase) w.fail(m, path, "an iteration or a phase trigger");
  check_bitflip_keys(w, m, path, s);
  check_target_phases(w, m, t, path, s);
}

}  // namespace

void read_failures(Walker& w, const YAML::Node& failures, InjectConfig& inj) {
  if (failures.IsNull()) return;
  if (!failures.IsSequence()) w.fail(failures, "inject.failures", "a list of failures");
  std::size_t i = 0;
  for (const auto& item : failures) {
    InjectionSpec s;
    read_spec(w, item, fmt::format("inject.failures[{}]", i++), s);
    inj.failures.push_back(std::move(s));
  }
}

void check_chaos(Walker& w, const YAML::Node& chaos, const InjectConfig& inj) {
  if (!Walker::child(chaos, "mtbf_iterations").IsDefined())
    w.fail(chaos, "inject.chaos.mtbf_iterations", "a number of iterations > 0");
  if (inj.chaos_action == InjectAction::bitflip || inj.chaos_action == InjectAction::sigstop)
    w.fail(Walker::child(chaos, "action"), "inject.chaos.action", "one of SIGKILL, SIGTERM, SIGSEGV, abort");
  if (inj.chaos_phase == Phase::spare_idle || inj.chaos_phase == Phase::start)
    w.fail(Walker::child(chaos, "phase"), "inject.chaos.phase",
           "a phase an active rank goes through after start-up (only spares idle)");
}

namespace {

std::string trim(const std::string& s) {
  const auto a = s.find_first_not_of(" \t");
  const auto b = s.find_last_not_of(" \t");
  return a == std::string::npos ? std::string() : s.substr(a, b - a + 1);
}

// WHEN of TARGET@WHEN: ITERATION, PHASE or ITERATION/PHASE, nothing else.
void read_when(const std::string& when, const std::string& key, const std::string& item, YAML::Node& spec) {
  const auto slash = when.find('/');
  const std::string first = trim(when.substr(0, slash));
  const std::string second = slash == std::string::npos ? std::string() : trim(when.substr(slash + 1));
  const bool ok = slash == std::string::npos ? !first.empty()
                                             : is_digits(first) && !second.empty() && !is_digits(second) &&
                                                   second.find('/') == std::string::npos;
  if (!ok)
    FX_THROW(
        ConfigError, "env FX_INJECT", key,
        fmt::format("expected TARGET@ITERATION, TARGET@PHASE or TARGET@ITERATION/PHASE (e.g. 2@45/restore), "
                    "got '{}'",
                    item));
  if (slash == std::string::npos) {
    spec[is_digits(first) ? "iteration" : "phase"] = first;
  } else {
    spec["iteration"] = first;
    spec["phase"] = second;
  }
}

}  // namespace

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
      read_when(trim(when), key, item, spec);
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

}  // namespace fx::detail
