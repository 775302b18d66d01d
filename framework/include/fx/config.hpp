#pragma once
/// \file
/// fx's configuration: YAML file < FX_* environment < --fx-set key=value.
/// The schema is documented in docs/config.md; load_config validates it
/// strictly and throws fx::ConfigError naming file:line:column.
#include <fx/config_section.hpp>
#include <fx/data_store/options.hpp>
#include <fx/enum_names.hpp>
#include <fx/log.hpp>
#include <fx/spares/options.hpp>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

/// No spare left for a failed rank: continue with fewer ranks (the app's
/// resize hook), or stop cleanly (exit 4).
enum class ExhaustedPolicy { shrink, abort };
/// A checkpoint existed but none can be restored: end the job (exit 4) or
/// start again from iteration 0.
enum class LostCheckpointPolicy { stop, restart };
/// Reinit's handler: act on a failure at once (async) or at the next
/// fx::test_failure() (sync); see fx/reinit.hpp.
enum class ReinitMode { async, sync };
/// Injection points. `restore` is the restore after a repair (or a resize);
/// `start-restore` the attempt at a fresh start (checkpoint.hdf5.restart,
/// Reinit's first reload), so one name never means both.
/// `checkpoint`, `commit-save`, `commit-posted`, `commit-agree`, `node-write` and
/// `restore-load` lie inside the data store's commit and restore
/// (fx::StorePoint), so an explicit ctx.store().commit() passes them too;
/// `restored` is the start of the app's after-restore hook
/// (ResilientApp::restored). `start` is fx's own start-up, after MPI_Init
/// returned and before the collectives that place the spares (world-rank
/// targets only, `world:5`). `repair-rebuild` lies inside each round of a
/// repair, after its shrink (once every live process has it): a death
/// there interrupts the round.
enum class Phase {
  start,
  compute,
  halo,
  checkpoint,
  commit_save,
  commit_posted,
  commit_agree,
  node_write,
  restore,
  restore_load,
  restored,
  start_restore,
  repair,
  tryblock_commit,
  spare_idle,
  finalize,
  repair_rebuild
};
/// Who an injected failure hits: a logical rank, a world rank, the i-th
/// spare process, or the rank holding a logical rank's buddy copy.
enum class TargetKind { rank, world, spare, buddy_of };
/// sigstop freezes the process at its point (a hang there; on test hosts the
/// trigger for losing its host at that point, HOST_EVENTS "stopped").
enum class InjectAction { sigkill, sigterm, sigsegv, abort, sigstop, bitflip };

/// `spares`: how many processes wait as spares, where, and how.
struct SparesConfig {
  int count = 0;                                    ///< spares: S (the last S processes)
  SpareIdle idle = SpareIdle::sleep;                ///< how a spare waits
  double poll_interval_ms = 1.0;                    ///< sleep mode: time between progress checks
  SparePlacement placement = SparePlacement::last;  ///< which world ranks are spares
};

/// `recovery`: what a repair may do, and when to give up.
struct RecoveryConfig {
  /// No spare left for a failed rank.
  ExhaustedPolicy on_exhausted = ExhaustedPolicy::abort;
  int max_rounds = 10;      ///< repair rounds per failure before giving up
  double timeout_s = 30.0;  ///< bound on one repair
  int max_failures = 1000;  ///< total failures survived before giving up
  /// A checkpoint existed but none can be restored.
  LostCheckpointPolicy on_lost_checkpoint = LostCheckpointPolicy::stop;
};

/// `detector`: the heartbeat failure detector.
struct DetectorConfig {
  double period_s = 0.0;   ///< 0: launcher-only detection (local deaths)
  double timeout_s = 0.0;  ///< heartbeat timeout (0: 4 x period_s)
};

/// `tryblock`: the default policy of TryBlocks (fx::TryOptions overrides it).
struct TryBlockConfig {
  int soft_retries = 2;     ///< times an aborted block is run again
  double timeout_s = 10.0;  ///< bound on the waits inside a block
  bool rollback = true;     ///< after retries: roll back to the last checkpoint
};

/// `reinit`: global restart instead of fx::ResilientApp's resume in place.
struct ReinitConfig {
  bool enabled = false;                 ///< every process re-enters the resilient function after a repair
  ReinitMode mode = ReinitMode::async;  ///< when a failure takes effect
};

/// One injected failure (`inject.failures[i]`, an FX_INJECT spec): who, when, how.
struct InjectionSpec {
  // Target: exactly one of these is meaningful, by `target_kind`.
  /// What `target` names: a logical rank, a world rank, a spare or a buddy_of rank.
  TargetKind target_kind = TargetKind::rank;
  int target = 0;               ///< the rank (logical or world), spare index or buddy_of rank
  std::int64_t iteration = -1;  ///< -1: no iteration trigger
  std::optional<Phase> phase;   ///< none: any phase
  /// How the victim fails.
  InjectAction action = InjectAction::sigkill;
  std::string member;  ///< bitflip: the registered member to corrupt
  int repeat = 1;      ///< copies of this spec (the k-th at iteration + k * every)
  std::string origin;  ///< where it was declared (file:line:column)
  // Extensions:
  std::int64_t every = 1;     ///< repeat > 1: iterations between the copies
  std::int64_t element = -1;  ///< bitflip: element index (-1: the middle one)
  int bit = -1;               ///< bitflip: bit in the element (-1: see docs/config.md)
  std::string key;            ///< its key path, e.g. "inject.failures[0]"
  int attempt = 1;            ///< the launch attempt it fires in (FX_ATTEMPT, under --supervise)
};

/// `inject`: the failures a test run injects, listed or drawn at random (chaos).
struct InjectConfig {
  std::vector<InjectionSpec> failures;  ///< `inject.failures` and FX_INJECT
  bool chaos = false;                   ///< `inject.chaos` is configured
  std::uint64_t chaos_seed = 0;         ///< seeds the chaos generator
  // Extensions.
  /// Chaos draws gaps between failures from an exponential distribution
  /// with this mean (in iterations), victims uniformly over the logical
  /// ranks, from a generator seeded with chaos_seed.
  double chaos_mtbf_iterations = 0.0;
  int chaos_max_failures = 1;    ///< failures drawn
  std::int64_t chaos_start = 1;  ///< no chaos failure before this iteration
  /// How the chaos victims fail.
  InjectAction chaos_action = InjectAction::sigkill;
  std::optional<Phase> chaos_phase;  ///< none: the first injection point reached
  std::string chaos_origin;          ///< where inject.chaos was declared
  int buddy_distance = 1;            ///< copy of checkpoint.memory.buddy_distance
};

/// Where a setting came from: "file:line:column", "env FX_SPARES", "--fx-set"
/// or "default", and the key as the user wrote it.
struct ConfigOrigin {
  std::string position;  ///< "file:line:column", "env FX_SPARES", "--fx-set" or "default"
  std::string key;       ///< the key as the user wrote it
};

/// fx's whole configuration, one member per top-level section (docs/config.md).
struct Config {
  SparesConfig spares;          ///< `spares`
  RecoveryConfig recovery;      ///< `recovery`
  DetectorConfig detector;      ///< `detector`
  CheckpointConfig checkpoint;  ///< `checkpoint`
  TryBlockConfig tryblock;      ///< `tryblock`
  ReinitConfig reinit;          ///< `reinit`
  /// `log.level`
  log::Level log_level = log::Level::info;
  std::string report_path;  ///< "" : no report
  /// `inject`
  InjectConfig inject;
  ConfigSection app;   ///< the application's own section (ctx.config())
  std::string source;  ///< the YAML file, or "" when none
  // Extensions:
  std::map<std::string, ConfigOrigin> origins;  ///< canonical key -> where it was set
  std::vector<std::string> notes;               ///< warnings for the runtime to log once (world rank 0)
  /// Where `key` (canonical, e.g. "spares.count", "app.nx") was set.
  /// \param key a canonical dotted key
  /// \return its entry in `origins`; else the file (`source`), or "default" without one
  ConfigOrigin origin_of(const std::string& key) const;
};

/// Parse --fx-config FILE / --fx-set k=v from argv (removing them), FX_*
/// variables and the file; validate. Deterministic and MPI-free, so every
/// rank reaches the same verdict.
/// \param[in,out] argc the argument count; decreased by the arguments taken out
/// \param[in,out] argv the arguments; fx's are taken out, the rest keep their order
/// \return the validated configuration
/// \throws ConfigError naming where the offending value was set (file:line:column,
///   "env FX_X", "--fx-set", "command line")
Config load_config(int& argc, char** argv);

/// The same from explicit inputs (tests, tools): `file` may be "", `env` is
/// a list of NAME=value strings (only FX_* ones are read), `sets` the
/// key=value texts of --fx-set.
/// \param file the YAML file's path; "" for none (then FX_CONFIG in `env`, if any)
/// \param env the environment as NAME=value strings
/// \param sets --fx-set's key=value texts, applied last, in order
/// \return the validated configuration
/// \throws ConfigError naming where the offending value was set
Config load_config(const std::string& file, const std::vector<std::string>& env,
                   const std::vector<std::string>& sets);

/// Checks that need the job's size (after MPI_Init, before any other MPI
/// work; every rank gets the same verdict): spares < world size, injection
/// targets that exist, buddy distance and parity group against the active
/// ranks.
/// \param config what load_config returned
/// \param world_size MPI_COMM_WORLD's size: active ranks and spares together
/// \throws ConfigError naming where the offending value was set
void validate_against_world(const Config& config, int world_size);

/// Deprecated: the free functions of the app's section before
/// fx::ConfigSection (CHANGELOG.md, Migration), kept for one release; the
/// origin and prefix arguments are ignored (the section knows where each
/// key was set).
///@{
/// Deprecated: section.get<T>(key, fallback) (ConfigSection::get).
/// \param section the section to read
/// \param key a key of it
/// \param fallback returned when it does not set `key`
/// \return the value set, or `fallback`
/// \throws ConfigError for a value that is not a T
template <class T>
[[deprecated("use ctx.config().get<T>(key, fallback)")]] T config_get(const ConfigSection& section,
                                                                      const std::string& key,
                                                                      const T& fallback, const Config& = {},
                                                                      const std::string& = "app") {
  return section.get<T>(key, fallback);
}
/// Deprecated: section.get<T>(key, fallback) (ConfigSection::get).
/// \param section the section to read
/// \param key a key of it
/// \param fallback returned when it does not set `key`
/// \return the value set, or `fallback`
/// \throws ConfigError for a value that is not a T
template <class T>
[[deprecated("use ctx.config().get<T>(key, fallback)")]] T config_get(const ConfigSection& section,
                                                                      const std::string& key,
                                                                      const T& fallback, const std::string&,
                                                                      const std::string& = "app") {
  return section.get<T>(key, fallback);
}
/// Deprecated: config.app.check_keys(known) (ConfigSection::check_keys).
/// \param config whose `app:` section is checked
/// \param known every key the section may set
/// \throws ConfigError for a key not in `known`
[[deprecated("use ctx.config().check_keys(known)")]] inline void config_check_keys(
    const Config& config, const std::vector<std::string>& known) {
  config.app.check_keys(known);
}
/// Deprecated: section.check_keys(known) (ConfigSection::check_keys).
/// \param section the section to check
/// \param known every key the section may set
/// \throws ConfigError for a key not in `known`
[[deprecated("use section.check_keys(known)")]] inline void config_check_keys(
    const ConfigSection& section, const std::vector<std::string>& known, const std::string&,
    const std::string& = "app") {
  section.check_keys(known);
}
/// Deprecated: section.reject(key, expected) (ConfigSection::reject).
/// \param section the section `key` belongs to
/// \param key the key whose value is refused
/// \param expected what would have been accepted
/// \throws ConfigError always
[[deprecated("use section.reject(key, expected)")]] [[noreturn]] inline void config_reject(
    const ConfigSection& section, const std::string& key, const std::string& expected, const std::string&,
    const std::string& = "app") {
  section.reject(key, expected);
}
///@}

}  // namespace fx

FX_ENUM_NAMES(fx::ExhaustedPolicy, {fx::ExhaustedPolicy::abort, "abort"},
              {fx::ExhaustedPolicy::shrink, "shrink"})
FX_ENUM_NAMES(fx::LostCheckpointPolicy, {fx::LostCheckpointPolicy::stop, "stop"},
              {fx::LostCheckpointPolicy::restart, "restart"})
FX_ENUM_NAMES(fx::ReinitMode, {fx::ReinitMode::async, "async"}, {fx::ReinitMode::sync, "sync"})
FX_ENUM_NAMES(fx::Phase, {fx::Phase::start, "start"}, {fx::Phase::compute, "compute"},
              {fx::Phase::halo, "halo"}, {fx::Phase::checkpoint, "checkpoint"},
              {fx::Phase::commit_save, "commit-save"}, {fx::Phase::commit_posted, "commit-posted"},
              {fx::Phase::commit_agree, "commit-agree"}, {fx::Phase::node_write, "node-write"},
              {fx::Phase::restore, "restore"}, {fx::Phase::restore_load, "restore-load"},
              {fx::Phase::restored, "restored"}, {fx::Phase::start_restore, "start-restore"},
              {fx::Phase::repair, "repair"}, {fx::Phase::repair_rebuild, "repair-rebuild"},
              {fx::Phase::tryblock_commit, "tryblock-commit"}, {fx::Phase::spare_idle, "spare-idle"},
              {fx::Phase::finalize, "finalize"})
FX_ENUM_NAMES(fx::TargetKind, {fx::TargetKind::rank, "rank"}, {fx::TargetKind::world, "world"},
              {fx::TargetKind::spare, "spare"}, {fx::TargetKind::buddy_of, "buddy-of"})
// Signals are read case-insensitively, with or without SIG (config_inject.cpp).
FX_ENUM_NAMES(fx::InjectAction, {fx::InjectAction::sigkill, "SIGKILL"},
              {fx::InjectAction::sigterm, "SIGTERM"}, {fx::InjectAction::sigsegv, "SIGSEGV"},
              {fx::InjectAction::abort, "abort"}, {fx::InjectAction::sigstop, "SIGSTOP"},
              {fx::InjectAction::bitflip, "bitflip"})
