#pragma once
// fx's configuration: YAML file < FX_* environment < --fx-set key=value.
// The schema is documented in docs/config.md; load_config validates it
// strictly and throws fx::ConfigError naming file:line:column.
#include <fx/data_store/options.hpp>
#include <fx/log.hpp>
#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

namespace fx {

enum class SpareIdle { block, yield, sleep };
enum class ExhaustedPolicy { shrink, abort };

struct SparesConfig {
  int count = 0;                   // spares: S (the last S processes)
  SpareIdle idle = SpareIdle::sleep;
  double poll_interval_ms = 1.0;   // sleep mode: time between progress checks
};

struct RecoveryConfig {
  ExhaustedPolicy on_exhausted = ExhaustedPolicy::abort;
  int max_rounds = 10;             // repair rounds per failure before giving up
  double timeout_s = 30.0;         // bound on one repair
  int max_failures = 1000;         // total failures survived before giving up
};

struct DetectorConfig {
  double period_s = 0.0;           // 0: launcher-only detection (local deaths)
  double timeout_s = 0.0;
};

struct TryBlockConfig {
  int soft_retries = 2;
  double timeout_s = 10.0;
  bool rollback = true;            // after retries: roll back to the last checkpoint
};

struct ReinitConfig {
  bool enabled = false;
  std::string mode = "async";      // async | sync
};

enum class InjectAction { sigkill, sigterm, sigsegv, abort, bitflip };

struct InjectionSpec {
  // Target: exactly one of these is meaningful, by `target_kind`.
  std::string target_kind = "rank";  // rank | world | spare | buddy-of
  int target = 0;
  std::int64_t iteration = -1;       // -1: no iteration trigger
  std::string phase;                 // "" or compute|halo|checkpoint|restore|repair|...
  InjectAction action = InjectAction::sigkill;
  std::string member;                // bitflip: the registered member to corrupt
  int repeat = 1;
  std::string origin;                // where it was declared (file:line:column)
};

struct InjectConfig {
  std::vector<InjectionSpec> failures;
  bool chaos = false;
  double chaos_mtbf_s = 0.0;
  std::uint64_t chaos_seed = 0;
};

struct Config {
  SparesConfig spares;
  RecoveryConfig recovery;
  DetectorConfig detector;
  CheckpointConfig checkpoint;
  TryBlockConfig tryblock;
  ReinitConfig reinit;
  log::Level log_level = log::Level::info;
  std::string report_path;         // "" : no report
  InjectConfig inject;
  YAML::Node app;                  // the application's own section
  std::string source;              // the YAML file, or "" when none
};

// Parse --fx-config FILE / --fx-set k=v from argv (removing them), FX_*
// variables and the file; validate. Deterministic and MPI-free, so every
// rank reaches the same verdict. Throws ConfigError.
Config load_config(int& argc, char** argv);

}  // namespace fx
