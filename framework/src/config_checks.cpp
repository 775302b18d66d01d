// Checks between keys (on the merged configuration, with the position of
// the key that has to change), writable paths, and the checks that need
// the job's size.
#include <fmt/format.h>

#include <fx/detail/files.hpp>

#include "config_schema.hpp"

namespace fx::detail {

bool memory_on(const Config& cfg) {
  return cfg.checkpoint.memory.every > 0 || cfg.checkpoint.memory.every_auto;
}

void cross_check(Walker& w, const YAML::Node& root, const Config& cfg) {
  const auto& det = cfg.detector;
  if (det.period_s == 0 && det.timeout_s > 0)
    w.fail(node_at(root, "detector.timeout_s"), "detector.timeout_s",
           "0 when detector.period_s is 0 (the heartbeat detector is off)");
  if (det.period_s > 0 && det.timeout_s > 0 && det.timeout_s <= det.period_s)
    w.fail(node_at(root, "detector.timeout_s"), "detector.timeout_s",
           fmt::format("a timeout longer than detector.period_s ({})", det.period_s));
  if (cfg.checkpoint.memory.every_auto && cfg.checkpoint.mtbf_s <= 0)
    w.fail(node_at(root, "checkpoint.memory.every"), "checkpoint.memory.every",
           "an interval >= 0, or auto together with checkpoint.mtbf_s > 0 (the interval is chosen from it)");
  if (cfg.checkpoint.hdf5.every > 0 && !memory_on(cfg))
    w.fail(node_at(root, "checkpoint.hdf5.every"), "checkpoint.hdf5.every",
           "0 when checkpoint.memory.every is 0 (HDF5 takes every m-th memory checkpoint)");
  if (cfg.checkpoint.node.every > 0 && !memory_on(cfg))
    w.fail(node_at(root, "checkpoint.node.every"), "checkpoint.node.every",
           "0 when checkpoint.memory.every is 0 (node-local storage takes every m-th memory checkpoint)");
  if (cfg.reinit.enabled && cfg.recovery.on_exhausted == ExhaustedPolicy::shrink)
    w.fail(node_at(root, "reinit.enabled"), "reinit.enabled",
           "false when recovery.on_exhausted is shrink (Reinit restarts at the same size)");
}

namespace {
// One line naming the key, where it was set, its value and why not
// (`checked`: the part of the value fx can check before it runs).
void refuse_unwritable(const ConfigOrigin& o, const std::string& value, PathKind kind,
                       const std::string& checked) {
  const std::string why = unwritable_reason(checked, kind);
  if (why.empty()) return;
  FX_THROW(ConfigError, o.position, o.key,
           fmt::format("expected a writable {}, got '{}' ({})",
                       kind == PathKind::file ? "file path" : "directory", value, why));
}
void refuse_unwritable(const ConfigOrigin& o, const std::string& value, PathKind kind) {
  refuse_unwritable(o, value, kind, value);
}
}  // namespace

// The places fx writes to must be writable, and no device node, FIFO,
// socket or symbolic link, before any MPI work starts.
void check_paths(const Config& cfg, const std::vector<std::string>& env) {
  if (!cfg.report_path.empty())
    refuse_unwritable(cfg.origin_of("report.path"), cfg.report_path, PathKind::file);
  if (cfg.checkpoint.hdf5.every > 0)
    refuse_unwritable(cfg.origin_of("checkpoint.hdf5.directory"), cfg.checkpoint.hdf5.directory,
                      PathKind::directory);
  if (cfg.checkpoint.node.every > 0) {
    // Up to {host}: the rest is this host's, made by the store.
    const std::string& dir = cfg.checkpoint.node.directory;
    const auto host = dir.find("{host}");
    const auto cut = host == std::string::npos ? dir.size() : dir.rfind('/', host);
    refuse_unwritable(cfg.origin_of("checkpoint.node.directory"), dir, PathKind::directory,
                      cut == std::string::npos ? "." : dir.substr(0, cut == 0 ? 1 : cut));
  }
  // The launcher's verdict file (start-up marks and kill stamps beside it)
  // and the supervisor's progress stamp.
  for (const std::string name : {"FX_STATUS_FILE", "FX_PROGRESS_FILE"}) {
    for (const auto& entry : env)
      if (entry.size() > name.size() + 1 && entry.compare(0, name.size() + 1, name + "=") == 0)
        refuse_unwritable(ConfigOrigin{"env", name}, entry.substr(name.size() + 1), PathKind::file);
  }
}

}  // namespace fx::detail

namespace fx {
namespace {

void check_spares_fit(const Config& cfg, int world_size) {
  const int spares = cfg.spares.count;
  if (spares >= world_size) {
    const auto o = cfg.origin_of("spares.count");
    FX_THROW(
        ConfigError, o.position, o.key,
        fmt::format("expected fewer spares than the job's {} processes (at least one active rank), got '{}'",
                    world_size, spares));
  }
}

// The buddy distance and the parity group, against the active ranks.
void check_memory_layout(const Config& cfg, int active) {
  const auto& mem = cfg.checkpoint.memory;
  if (detail::memory_on(cfg) && active > 1 && mem.buddy_distance % active == 0) {
    const auto o = cfg.origin_of("checkpoint.memory.buddy_distance");
    FX_THROW(ConfigError, o.position, o.key,
             fmt::format(
                 "expected a distance that is not a multiple of the {} active ranks (a rank would be its own "
                 "buddy), got '{}'",
                 active, mem.buddy_distance));
  }
  if (detail::memory_on(cfg) && mem.scheme == MemoryScheme::parity && mem.parity_group > active) {
    const auto o = cfg.origin_of("checkpoint.memory.parity_group");
    FX_THROW(ConfigError, o.position, o.key,
             fmt::format("expected at most the {} active ranks, got '{}'", active, mem.parity_group));
  }
}

// What an injection's target should have been, or "" when it exists.
std::string missing_target(const InjectionSpec& s, int active, int spares, int world_size,
                           SparePlacement placement) {
  std::string expected;
  const TargetKind kind = s.target_kind;
  if ((kind == TargetKind::rank || kind == TargetKind::buddy_of) && s.target >= active)
    expected = fmt::format("a logical rank below {} (the active ranks)", active);
  else if (kind == TargetKind::world && s.target >= world_size)
    expected = fmt::format("a world rank below {} (the job's processes)", world_size);
  else if (kind == TargetKind::spare && spares == 0)
    expected = "a target that exists (the job has no spares)";
  else if (kind == TargetKind::spare && s.target >= spares)
    expected = fmt::format("a spare index below {} (the job's spares)", spares);
  // Under `spread` the spares are each host's last ranks, known only once
  // the hosts are: a bit flip aimed at one never fires, and the run says so.
  else if (kind == TargetKind::world && s.target >= active && s.action == InjectAction::bitflip &&
           placement == SparePlacement::last)
    expected = fmt::format(
        "an active rank for bitflip (world ranks {}.. are spares under spares.placement 'last')", active);
  return expected;
}

}  // namespace

void validate_against_world(const Config& cfg, int world_size) {
  check_spares_fit(cfg, world_size);
  const int spares = cfg.spares.count;
  const int active = world_size - spares;
  check_memory_layout(cfg, active);
  for (const auto& s : cfg.inject.failures) {
    const std::string key = s.key + ".target";
    const std::string got = detail::target_text(s.target_kind, s.target);
    const std::string expected = missing_target(s, active, spares, world_size, cfg.spares.placement);
    if (!expected.empty())
      FX_THROW(ConfigError, s.origin, key, fmt::format("expected {}, got '{}'", expected, got));
  }
}

}  // namespace fx
