// Bad configurations: each case asserts the exact one-line message
// (`{f}` stands for the YAML file's path).
#include <gtest/gtest.h>

#include <sys/stat.h>

#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <fx_test/special_files.hpp>

#include "config_test_util.hpp"

namespace {

struct BadCase {
  std::string name;
  std::string yaml;  // "" : no file
  std::vector<std::string> env;
  std::vector<std::string> sets;
  int world_size;  // > 0: also validate_against_world
  std::string expected;
};

std::ostream& operator<<(std::ostream& os, const BadCase& c) { return os << c.name; }

const fx::test::ScratchDir& scratch() {
  static fx::test::ScratchDir dir;
  return dir;
}

std::string expand(std::string text, const std::string& file) {
  for (auto pos = text.find("{f}"); pos != std::string::npos; pos = text.find("{f}", pos + file.size()))
    text.replace(pos, 3, file);
  for (auto pos = text.find("{d}"); pos != std::string::npos;
       pos = text.find("{d}", pos + scratch().path().size()))
    text.replace(pos, 3, scratch().path());
  return text;
}

const std::vector<BadCase> kCases = {
    // --- malformed YAML and document shape
    {"unclosed_flow_sequence",
     "spares: [1, 2\n",
     {},
     {},
     0,
     "{f}:2:1: yaml: expected valid YAML, got 'end of sequence flow not found'"},
    {"bad_indentation",
     "spares: 2\n  idle: block\n",
     {},
     {},
     0,
     "{f}:2:7: yaml: expected valid YAML, got 'illegal map value'"},
    {"top_level_list",
     "- 1\n- 2\n",
     {},
     {},
     0,
     "{f}:1:1: document: expected a map of sections (spares, recovery, detector, checkpoint, tryblock, "
     "reinit, log, "
     "report, inject, app), got '[1, 2]'"},
    {"two_documents",
     "spares: 1\n---\nspares: 2\n",
     {},
     {},
     0,
     "{f}:2:1: document: expected one YAML document, got 2"},  // at its "---"
    // The chaos schedule is drawn at start: 10^9 failures kept every rank busy.
    {"chaos_max_failures_bounded",
     "inject:\n  chaos:\n    mtbf_iterations: 1\n    max_failures: 1000000000\n",
     {},
     {},
     0,
     "{f}:4:19: inject.chaos.max_failures: expected an integer from 1 to 100000, got '1000000000'"},
    // yaml-cpp's LoadAll looped for ever on it (fuzz_config).
    {"endless_documents",
     "!s~/,",
     {},
     {},
     0,
     "{f}:1:5: document: expected one YAML document, got more than 16"},
    // --- unknown and duplicate keys
    {"unknown_top_key_suggests",
     "sparse: 2\n",
     {},
     {},
     0,
     "{f}:1:1: sparse: expected one of spares, recovery, detector, checkpoint, tryblock, reinit, log, "
     "report, "
     "inject, app (did you mean 'spares'?), got 'sparse'"},
    {"unknown_nested_key_suggests",
     "checkpoint:\n  memroy:\n    every: 5\n",
     {},
     {},
     0,
     "{f}:2:3: checkpoint.memroy: expected one of memory, node, hdf5, mtbf_s (did you mean 'memory'?), got "
     "'memroy'"},
    {"unknown_key_no_suggestion",
     "recovery:\n  bananas: 3\n",
     {},
     {},
     0,
     "{f}:2:3: recovery.bananas: expected one of on_exhausted, max_rounds, timeout_s, max_failures, "
     "on_lost_checkpoint, got 'bananas'"},
    {"duplicate_key",
     "spares: 1\nlog:\n  level: info\nspares: 2\n",
     {},
     {},
     0,
     "{f}:4:1: spares: expected each key once, got 'spares' again (first at line 1)"},
    // --- wrong types
    {"spares_not_a_number",
     "spares: two\n",
     {},
     {},
     0,
     "{f}:1:9: spares: expected a number of spares >= 0, got 'two'"},
    // A whole number too large for its key (or for 64 bits) names the top
    // of the range (it said only ">= 0", issue 40).
    {"spares_too_large",
     "spares: 4294967297\n",
     {},
     {},
     0,
     "{f}:1:9: spares: expected a number of spares >= 0 (at most 2147483647), got '4294967297'"},
    {"interval_too_large",
     "",
     {},
     {"checkpoint.memory.every=3000000000"},
     0,
     "--fx-set: checkpoint.memory.every: expected an interval >= 0 (0: off) or auto (at most 2147483647), "
     "got "
     "'3000000000'"},
    {"iteration_beyond_64_bits",
     "inject:\n  chaos:\n    mtbf_iterations: 10\n    start: 99999999999999999999\n",
     {},
     {},
     0,
     "{f}:4:12: inject.chaos.start: expected an iteration >= 0 (at most 9223372036854775807), got "
     "'99999999999999999999'"},
    {"interval_is_a_list",
     "checkpoint:\n  memory:\n    every: [1]\n",
     {},
     {},
     0,
     "{f}:3:12: checkpoint.memory.every: expected an interval >= 0 (0: off) or auto, got '[1]'"},
    {"auto_interval_without_mtbf",
     "checkpoint:\n  memory:\n    every: auto\n",
     {},
     {},
     0,
     "{f}:3:12: checkpoint.memory.every: expected an interval >= 0, or auto together with checkpoint.mtbf_s "
     "> 0 "
     "(the interval is chosen from it), got 'auto'"},
    {"bool_is_maybe",
     "checkpoint:\n  hdf5:\n    restart: maybe\n",
     {},
     {},
     0,
     "{f}:3:14: checkpoint.hdf5.restart: expected true or false, got 'maybe'"},
    {"section_is_a_scalar",
     "recovery: abort\n",
     {},
     {},
     0,
     "{f}:1:11: recovery: expected a map with keys on_exhausted, max_rounds, timeout_s, max_failures, "
     "on_lost_checkpoint, got 'abort'"},
    {"float_for_integer",
     "recovery:\n  max_rounds: 2.5\n",
     {},
     {},
     0,
     "{f}:2:15: recovery.max_rounds: expected an integer >= 1, got '2.5'"},
    {"app_not_a_map",
     "app: 3\n",
     {},
     {},
     0,
     "{f}:1:6: app: expected a map (the application's settings), got '3'"},
    // --- out of range: negative and zero intervals
    {"negative_interval",
     "checkpoint:\n  memory:\n    every: -5\n",
     {},
     {},
     0,
     "{f}:3:12: checkpoint.memory.every: expected an interval >= 0 (0: off) or auto, got '-5'"},
    {"zero_timeout",
     "recovery:\n  timeout_s: 0\n",
     {},
     {},
     0,
     "{f}:2:14: recovery.timeout_s: expected a number > 0, got '0'"},
    {"zero_buddy_distance",
     "checkpoint:\n  memory:\n    buddy_distance: 0\n",
     {},
     {},
     0,
     "{f}:3:21: checkpoint.memory.buddy_distance: expected a distance >= 1, got '0'"},
    {"negative_spares",
     "spares:\n  count: -1\n",
     {},
     {},
     0,
     "{f}:2:10: spares.count: expected a number of spares >= 0, got '-1'"},
    {"zero_poll_interval",
     "spares:\n  poll_interval_ms: 0\n",
     {},
     {},
     0,
     "{f}:2:21: spares.poll_interval_ms: expected a number > 0, got '0'"},
    // --- enumerations
    {"bad_idle_mode",
     "spares:\n  idle: spin\n",
     {},
     {},
     0,
     "{f}:2:9: spares.idle: expected one of block, yield, sleep, got 'spin'"},
    {"bad_policy_suggests",
     "recovery:\n  on_exhausted: shrnk\n",
     {},
     {},
     0,
     "{f}:2:17: recovery.on_exhausted: expected one of abort, shrink (did you mean 'shrink'?), got 'shrnk'"},
    {"bad_log_level",
     "log:\n  level: verbose\n",
     {},
     {},
     0,
     "{f}:2:10: log.level: expected one of trace, debug, info, warn, error, off, got 'verbose'"},
    {"bad_reinit_mode",
     "reinit:\n  mode: later\n",
     {},
     {},
     0,
     "{f}:2:9: reinit.mode: expected one of async, sync, got 'later'"},
    // --- contradictory settings
    {"hdf5_without_memory",
     "checkpoint:\n  hdf5:\n    every: 2\n",
     {},
     {},
     0,
     "{f}:3:12: checkpoint.hdf5.every: expected 0 when checkpoint.memory.every is 0 (HDF5 takes every m-th "
     "memory "
     "checkpoint), got '2'"},
    {"node_without_memory",
     "checkpoint:\n  node:\n    every: 1\n",
     {},
     {},
     0,
     "{f}:3:12: checkpoint.node.every: expected 0 when checkpoint.memory.every is 0 (node-local storage "
     "takes every m-th memory checkpoint), got '1'"},
    {"detector_timeout_without_period",
     "detector:\n  timeout_s: 5\n",
     {},
     {},
     0,
     "{f}:2:14: detector.timeout_s: expected 0 when detector.period_s is 0 (the heartbeat detector is off), "
     "got '5'"},
    {"detector_timeout_below_period",
     "detector:\n  period_s: 2\n  timeout_s: 1\n",
     {},
     {},
     0,
     "{f}:3:14: detector.timeout_s: expected a timeout longer than detector.period_s (2), got '1'"},
    {"reinit_with_shrink",
     "recovery:\n  on_exhausted: shrink\nreinit:\n  enabled: true\n",
     {},
     {},
     0,
     "{f}:4:12: reinit.enabled: expected false when recovery.on_exhausted is shrink (Reinit restarts at the "
     "same "
     "size), got 'true'"},
    {"spares_equal_processes",
     "spares: 4\n",
     {},
     {},
     4,
     "{f}:1:9: spares: expected fewer spares than the job's 4 processes (at least one active rank), got '4'"},
    {"spares_exceed_processes_env",
     "",
     {"FX_SPARES=6"},
     {},
     4,
     "env FX_SPARES: spares.count: expected fewer spares than the job's 4 processes (at least one active "
     "rank), "
     "got '6'"},
    {"set_replaces_env_spares",
     "",
     {"FX_SPARES=1"},
     {"spares=3"},
     3,
     "--fx-set: spares: expected fewer spares than the job's 3 processes (at least one active rank), got "
     "'3'"},
    {"buddy_is_self",
     "spares: 1\ncheckpoint:\n  memory:\n    every: 5\n    buddy_distance: 3\n",
     {},
     {},
     4,
     "{f}:5:21: checkpoint.memory.buddy_distance: expected a distance that is not a multiple of the 3 active "
     "ranks "
     "(a rank would be its own buddy), got '3'"},
    // --- fault injection
    {"bad_signal_suggests",
     "inject:\n  failures:\n    - {target: 1, iteration: 5, action: SIGKIL}\n",
     {},
     {},
     0,
     "{f}:3:41: inject.failures[0].action: expected one of SIGKILL, SIGTERM, SIGSEGV, abort, SIGSTOP, "
     "bitflip (did "
     "you mean "
     "'SIGKILL'?), got 'SIGKIL'"},
    {"bad_signal_name",
     "inject:\n  failures:\n    - target: 1\n      iteration: 5\n      action: SIGHUP\n",
     {},
     {},
     0,
     "{f}:5:15: inject.failures[0].action: expected one of SIGKILL, SIGTERM, SIGSEGV, abort, SIGSTOP, "
     "bitflip, got "
     "'SIGHUP'"},
    {"bad_target_syntax",
     "inject:\n  failures:\n    - {target: 'node:3', iteration: 5}\n",
     {},
     {},
     0,
     "{f}:3:16: inject.failures[0].target: expected a logical rank, rank:<r>, world:<w>, spare[:<i>] or "
     "buddy-of:<r>, got 'node:3'"},
    {"missing_trigger",
     "inject:\n  failures:\n    - target: 2\n",
     {},
     {},
     0,
     "{f}:3:7: inject.failures[0]: expected an iteration or a phase trigger, got '{target: 2}'"},
    {"missing_target",
     "inject:\n  failures:\n    - iteration: 2\n",
     {},
     {},
     0,
     "{f}:3:7: inject.failures[0]: expected a target (a logical rank, rank:<r>, world:<w>, spare[:<i>] or "
     "buddy-of:<r>), got '{iteration: 2}'"},
    {"bad_phase_suggests",
     "inject:\n  failures:\n    - {target: 0, phase: halos}\n",
     {},
     {},
     0,
     "{f}:3:26: inject.failures[0].phase: expected one of start, compute, halo, checkpoint, commit-save, "
     "commit-posted, commit-agree, node-write, "
     "restore, restore-load, restored, start-restore, repair, repair-rebuild, tryblock-commit, spare-idle, "
     "finalize (did you mean 'halo'?), got 'halos'"},
    {"bitflip_without_member",
     "inject:\n  failures:\n    - {target: 0, iteration: 3, action: bitflip}\n",
     {},
     {},
     0,
     "{f}:3:41: inject.failures[0].member: expected the name of a registered member for bitflip, got ''"},
    {"member_without_bitflip",
     "inject:\n  failures:\n    - {target: 0, iteration: 3, member: u}\n",
     {},
     {},
     0,
     "{f}:3:41: inject.failures[0].member: expected no member for action SIGKILL (only bitflip corrupts "
     "data), "
     "got 'u'"},
    {"spare_in_compute",
     "inject:\n  failures:\n    - {target: spare, phase: compute}\n",
     {},
     {},
     0,
     "{f}:3:30: inject.failures[0].phase: expected a phase a spare goes through (spare-idle, repair, "
     "repair-rebuild or finalize), got 'compute'"},
    {"spare_with_iteration",
     "inject:\n  failures:\n    - {target: 'spare:1', iteration: 5}\n",
     {},
     {},
     0,
     "{f}:3:38: inject.failures[0].iteration: expected no iteration for a spare target (idle spares do not "
     "count "
     "iterations; use a phase), got '5'"},
    {"start_needs_world_target",
     "inject:\n  failures:\n    - {target: 2, phase: start}\n",
     {},
     {},
     0,
     "{f}:3:16: inject.failures[0].target: expected a world:<w> target for phase start (roles are given "
     "during start-up), got '2'"},
    {"start_without_iteration",
     "inject:\n  failures:\n    - {target: 'world:2', phase: start, iteration: 4}\n",
     {},
     {},
     0,
     "{f}:3:52: inject.failures[0].iteration: expected no iteration for phase start (it comes before the "
     "first step), got '4'"},
    {"zero_repeat",
     "inject:\n  failures:\n    - {target: 0, iteration: 3, repeat: 0}\n",
     {},
     {},
     0,
     "{f}:3:41: inject.failures[0].repeat: expected an integer >= 1, got '0'"},
    {"target_rank_missing",
     "spares: 2\ninject:\n  failures:\n    - {target: 4, iteration: 3}\n",
     {},
     {},
     6,
     "{f}:4:16: inject.failures[0].target: expected a logical rank below 4 (the active ranks), got '4'"},
    {"bitflip_on_a_spare",
     "spares: 2\ninject:\n  failures:\n    - {target: 'world:5', iteration: 3, action: bitflip, member: u}\n",
     {},
     {},
     6,
     "{f}:4:16: inject.failures[0].target: expected an active rank for bitflip (world ranks 4.. are spares "
     "under spares.placement 'last'), got 'world:5'"},
    {"target_world_missing",
     "inject:\n  failures:\n    - {target: 'world:9', iteration: 3}\n",
     {},
     {},
     4,
     "{f}:3:16: inject.failures[0].target: expected a world rank below 4 (the job's processes), got "
     "'world:9'"},
    {"target_spare_none",
     "inject:\n  failures:\n    - {target: spare, phase: spare-idle}\n",
     {},
     {},
     4,
     "{f}:3:16: inject.failures[0].target: expected a target that exists (the job has no spares), got "
     "'spare'"},
    {"target_buddy_of_missing",
     "inject:\n  failures:\n    - {target: 'buddy-of:5', iteration: 1}\n",
     {},
     {},
     4,
     "{f}:3:16: inject.failures[0].target: expected a logical rank below 4 (the active ranks), got "
     "'buddy-of:5'"},
    {"chaos_without_mtbf",
     "inject:\n  chaos:\n    seed: 3\n",
     {},
     {},
     0,
     "{f}:3:5: inject.chaos.mtbf_iterations: expected a number of iterations > 0, got '{seed: 3}'"},
    {"chaos_bitflip",
     "inject:\n  chaos: {seed: 3, mtbf_iterations: 10, action: bitflip}\n",
     {},
     {},
     0,
     "{f}:2:49: inject.chaos.action: expected one of SIGKILL, SIGTERM, SIGSEGV, abort, got 'bitflip'"},
    // --- files fx must write
    {"unwritable_report",
     "report:\n  path: {d}/plain-file/run.yaml\n",
     {},
     {},
     0,
     "{f}:2:9: report.path: expected a writable file path, got '{d}/plain-file/run.yaml' ({d}/plain-file is "
     "not a "
     "directory)"},
    {"report_is_directory",
     "report:\n  path: {d}\n",
     {},
     {},
     0,
     "{f}:2:9: report.path: expected a writable file path, got '{d}' ({d} is a directory)"},
    {"unwritable_checkpoint_dir",
     "checkpoint:\n  memory: {every: 5}\n  hdf5: {every: 2, directory: {d}/plain-file/ckpt}\n",
     {},
     {},
     0,
     "{f}:3:31: checkpoint.hdf5.directory: expected a writable directory, got '{d}/plain-file/ckpt' "
     "({d}/plain-file is not a directory)"},
    // An existing target that is no regular file (made by BadConfig):
    // refused, never replaced (as root /dev/full became the report).
    {"report_device_node",
     "report:\n  path: {d}/dev\n",
     {},
     {},
     0,
     "{f}:2:9: report.path: expected a writable file path, got '{d}/dev' ({d}/dev is a character device)"},
    {"report_fifo",
     "",
     {"FX_REPORT={d}/fifo"},
     {},
     0,
     "env FX_REPORT: report.path: expected a writable file path, got '{d}/fifo' ({d}/fifo is a FIFO)"},
    {"report_socket",
     "",
     {"FX_CFG_REPORT__PATH={d}/sock"},
     {},
     0,
     "env FX_CFG_REPORT__PATH: report.path: expected a writable file path, got '{d}/sock' ({d}/sock is a "
     "socket)"},
    {"report_symlink",
     "report:\n  path: {d}/link\n",
     {},
     {},
     0,
     "{f}:2:9: report.path: expected a writable file path, got '{d}/link' ({d}/link is a symbolic link)"},
    {"status_file_fifo",
     "",
     {"FX_STATUS_FILE={d}/fifo"},
     {},
     0,
     "env: FX_STATUS_FILE: expected a writable file path, got '{d}/fifo' ({d}/fifo is a "
     "FIFO)"},
    {"progress_file_device_node",
     "",
     {"FX_PROGRESS_FILE={d}/dev"},
     {},
     0,
     "env: FX_PROGRESS_FILE: expected a writable file path, got '{d}/dev' ({d}/dev is a "
     "character device)"},
    {"checkpoint_dir_socket",
     "checkpoint:\n  memory: {every: 5}\n  hdf5: {every: 2, directory: {d}/sock}\n",
     {},
     {},
     0,
     "{f}:3:31: checkpoint.hdf5.directory: expected a writable directory, got '{d}/sock' ({d}/sock is not a "
     "directory (a socket))"},
    {"node_dir_fifo",
     "checkpoint:\n  memory: {every: 5}\n  node:\n    every: 2\n    directory: \"{d}/fifo/{host}\"\n",
     {},
     {},
     0,
     "{f}:5:16: checkpoint.node.directory: expected a writable directory, got '{d}/fifo/{host}' ({d}/fifo is "
     "not a directory (a FIFO))"},
    // --- command line
    {"set_without_equals",
     "",
     {},
     {"spares"},
     0,
     "--fx-set: spares: expected key=value with a dotted key (e.g. checkpoint.memory.every=10), got "
     "'spares'"},
    {"set_empty_key",
     "",
     {},
     {"=3"},
     0,
     "--fx-set: <key>: expected key=value with a dotted key (e.g. checkpoint.memory.every=10), got '=3'"},
    {"set_bad_key_chars",
     "",
     {},
     {"spares count=2"},
     0,
     "--fx-set: spares count: expected key=value with a dotted key (e.g. checkpoint.memory.every=10), got "
     "'spares "
     "count=2'"},
    {"set_unknown_key",
     "spares: 1\n",
     {},
     {"checkpoint.memroy.every=3"},
     0,
     "--fx-set: checkpoint.memroy: expected one of memory, node, hdf5, mtbf_s (did you mean 'memory'?), got "
     "'memroy'"},
    {"set_wrong_type",
     "spares: 1\n",
     {},
     {"recovery.max_rounds=many"},
     0,
     "--fx-set: recovery.max_rounds: expected an integer >= 1, got 'many'"},
    {"set_bad_yaml_value",
     "",
     {},
     {"app.sizes=[1,"},
     0,
     "--fx-set: app.sizes: expected a YAML value, got '[1,' (end of sequence flow not found)"},
    {"set_below_a_value",
     "checkpoint:\n  memory:\n    every: 5\n",
     {},
     {"checkpoint.memory.every.k=1"},
     0,
     "--fx-set: checkpoint.memory.every.k: expected checkpoint.memory.every to be a map, got '5'"},
    // --- environment
    {"env_spares_not_a_number",
     "spares: 1\n",
     {"FX_SPARES=abc"},
     {},
     0,
     "env FX_SPARES: spares.count: expected a number of spares >= 0, got 'abc'"},
    {"env_log_level",
     "",
     {"FX_LOG_LEVEL=loud"},
     {},
     0,
     "env FX_LOG_LEVEL: log.level: expected one of trace, debug, info, warn, error, off, got 'loud'"},
    {"env_inject_bad_signal",
     "",
     {"FX_INJECT=2@5:SIGFOO"},
     {},
     0,
     "env FX_INJECT: inject.failures[0].action: expected one of SIGKILL, SIGTERM, SIGSEGV, abort, SIGSTOP, "
     "bitflip, "
     "got "
     "'SIGFOO'"},
    {"env_inject_malformed",
     "",
     {"FX_INJECT=1@3; kill rank 2"},
     {},
     0,
     "env FX_INJECT: inject.failures[1]: expected TARGET@WHEN[:ACTION] or key=value,... got 'kill rank 2'"},
    // The short form's WHEN is ITERATION, PHASE or ITERATION/PHASE: an
    // iteration too large is named as one, a phase before the iteration
    // is refused (it was read as 30/restore).
    {"env_inject_huge_iteration",
     "",
     {"FX_INJECT=1@99999999999999999999"},
     {},
     0,
     "env FX_INJECT: inject.failures[0].iteration: expected an iteration from 0 to 9223372036854775807, got "
     "'99999999999999999999'"},
    {"env_inject_phase_first",
     "",
     {"FX_INJECT=1@restore/30"},
     {},
     0,
     "env FX_INJECT: inject.failures[0]: expected TARGET@ITERATION, TARGET@PHASE or TARGET@ITERATION/PHASE "
     "(e.g. 2@45/restore), got '1@restore/30'"},
    {"env_inject_two_iterations",
     "",
     {"FX_INJECT=1@30/40"},
     {},
     0,
     "env FX_INJECT: inject.failures[0]: expected TARGET@ITERATION, TARGET@PHASE or TARGET@ITERATION/PHASE "
     "(e.g. 2@45/restore), got '1@30/40'"},
    {"env_cfg_unknown_key",
     "",
     {"FX_CFG_CHECKPOINT__MEMORY__EVRY=3"},
     {},
     0,
     "env FX_CFG_CHECKPOINT__MEMORY__EVRY: checkpoint.memory.evry: expected one of every, buddy_distance, "
     "scheme, "
     "parity_group, depth, async, copier, progress (did you mean 'every'?), got 'evry'"},
    {"missing_file",
     "",
     {"FX_CONFIG={d}/nope.yaml"},
     {},
     0,
     "env FX_CONFIG: {d}/nope.yaml: expected a readable YAML file, got '{d}/nope.yaml' (No such file or "
     "directory)"},
};

class BadConfig : public ::testing::TestWithParam<BadCase> {};

TEST_P(BadConfig, ExactMessage) {
  const BadCase& c = GetParam();
  static bool made = [] {
    scratch().file("plain-file", "not a directory\n");
    fx_test::make_special_files(scratch().path());
    return true;
  }();
  (void)made;
  const std::string file = c.yaml.empty() ? "" : scratch().file(c.name + ".yaml", expand(c.yaml, ""));
  std::vector<std::string> env;
  for (const auto& e : c.env) env.push_back(expand(e, file));
  const std::string got = fx::test::load_error(file, env, c.sets, c.world_size);
  EXPECT_EQ(got, expand(c.expected, file));
  EXPECT_EQ(got.find('\n'), std::string::npos) << "one line";
}

INSTANTIATE_TEST_SUITE_P(Cases, BadConfig, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<BadCase>& i) { return i.param.name; });

// The argv front end: its own errors. load_config(argc, argv) on `args`:
// the ConfigError's text, or "" when it loaded.
std::string argv_error(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  try {
    fx::load_config(argc, argv.data());
  } catch (const fx::ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(LoadConfigArgv, MissingSetArgument) {
  EXPECT_EQ(argv_error({"app", "--fx-set"}), "--fx-set: <key>: expected key=value after --fx-set, got ''");
}

// An fx flag is never the value of --fx-config or --fx-set (nor is the
// launcher's --fx-print-launch, which fx::run takes out before it parses:
// test launch_missing_config_file).
TEST(LoadConfigArgv, AnFxFlagIsNoValue) {
  EXPECT_EQ(argv_error({"app", "--fx-config", "--fx-set", "spares=1"}),
            "--fx-config: <file>: expected a file after --fx-config, got the flag '--fx-set'");
  EXPECT_EQ(argv_error({"app", "--fx-set", "--fx-config", "a.yaml"}),
            "--fx-set: <key>: expected key=value after --fx-set, got the flag '--fx-config'");
}

// fx owns the --fx- prefix: a flag it does not know stops the run (a batch
// of runs once used defaults, silently, for `--fx-sett k=v`).
TEST(LoadConfigArgv, UnknownFxFlag) {
  EXPECT_EQ(argv_error({"app", "--fx-bogus"}),
            "command line: --fx-bogus: expected --fx-config FILE or --fx-set KEY=VALUE, got '--fx-bogus'");
  EXPECT_EQ(
      argv_error({"app", "--fx-sett", "spares=1"}),
      "command line: --fx-sett: expected --fx-config FILE or --fx-set KEY=VALUE (did you mean '--fx-set'?), "
      "got '--fx-sett'");
  EXPECT_EQ(argv_error({"app", "--fx-conifg=a.yaml"}),
            "command line: --fx-conifg: expected --fx-config FILE or --fx-set KEY=VALUE (did you mean "
            "'--fx-config'?), got '--fx-conifg=a.yaml'");
}

TEST(LoadConfigArgv, TwoConfigFiles) {
  const auto a = scratch().file("a.yaml", "spares: 1\n");
  const auto b = scratch().file("b.yaml", "spares: 1\n");
  EXPECT_EQ(argv_error({"app", "--fx-config", a, "--fx-config=" + b}),
            "--fx-config: " + b + ": expected one configuration file, got '" + b + "' after '" + a + "'");
}

}  // namespace

namespace {
// /proc passes access(W_OK) as root, yet nothing can be created there: the
// check must try, so the run fails before MPI work instead of at the end.
TEST(WritableCheck, ProcIsNotWritable) {
  const std::string f = scratch().file("proc_report.yaml", "report:\n  path: /proc/fx/run.yaml\n");
  const std::string got = fx::test::load_error(f);
  EXPECT_EQ(got.rfind(f + ":2:9: report.path: expected a writable file path, got '/proc/fx/run.yaml' (", 0),
            0u)
      << got;
  const std::string g = scratch().file(
      "proc_ckpt.yaml", "checkpoint:\n  memory: {every: 5}\n  hdf5: {every: 2, directory: /proc/fx-ckpt}\n");
  const std::string got2 = fx::test::load_error(g);
  EXPECT_NE(got2.find("checkpoint.hdf5.directory: expected a writable directory, got '/proc/fx-ckpt' ("),
            std::string::npos)
      << got2;
  // A regular file there passed too (as root), and the run failed after
  // its work: the report's temporary cannot be made beside it.
  const std::string got3 = fx::test::load_error("", {"FX_REPORT=/proc/self/status"});
  EXPECT_EQ(
      got3,
      "env FX_REPORT: report.path: expected a writable file path, got '/proc/self/status' (/proc/self is not "
      "writable)");
}
}  // namespace

namespace {
// --fx-config naming something that is not a readable file: one line, no
// crash, and no rank blocked opening a FIFO.
TEST(ConfigFile, NotARegularFile) {
  const std::string dir = scratch().path();
  const std::string fifo = dir + "/config.fifo";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const std::string big = dir + "/huge.yaml";
  std::filesystem::resize_file(scratch().file("huge.yaml", ""), (16u << 20) + 1);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {dir, "a directory"},
      {fifo, "a FIFO"},
      {"/dev/null", "not a regular file"},
      {big, "16777217 bytes, more than the 16 MiB a configuration may have"},
  };
  for (const auto& [path, why] : cases) {
    EXPECT_EQ(fx::test::load_error("", {"FX_CONFIG=" + path}),
              "env FX_CONFIG: " + path + ": expected a readable YAML file, got '" + path + "' (" + why + ")");
  }
}
}  // namespace

namespace {
// Every source is validated before precedence applies: a bad file value is
// an error even where the launcher's FX_SPARES (or --fx-set) replaces it.
TEST(EverySource, FileValueUnderAnOverride) {
  for (const std::string bad : {"2.5", "4294967297", "-1"}) {
    const std::string f = scratch().file("overridden.yaml", "spares: " + bad + "\n");
    const std::string range = bad == "4294967297" ? " (at most 2147483647)" : "";
    EXPECT_EQ(fx::test::load_error(f, {"FX_SPARES=2"}),
              f + ":1:9: spares: expected a number of spares >= 0" + range + ", got '" + bad + "'");
    EXPECT_EQ(fx::test::load_error(f, {}, {"spares=2"}),
              f + ":1:9: spares: expected a number of spares >= 0" + range + ", got '" + bad + "'");
  }
  // A contradiction inside the file that an override resolves is fine.
  const std::string g =
      scratch().file("resolved.yaml", "checkpoint:\n  memory: {every: 0}\n  hdf5: {every: 2}\n");
  EXPECT_EQ(fx::test::load_error(g, {"FX_CFG_CHECKPOINT__MEMORY__EVERY=5"}), "");
}
}  // namespace

namespace {
// Keys an app declared (fx::run<App> with App::config_keys()): others are
// rejected with the place they were set, whichever source that was.
TEST(AppKeys, UnknownKeyNamesItsSource) {
  const std::vector<std::string> known = {"nx", "steps"};
  const std::string f = scratch().file("app_keys.yaml", "app:\n  nx: 4\n  stepz: 3\n");
  auto check = [&](const std::string& file, const std::vector<std::string>& env,
                   const std::vector<std::string>& sets) {
    try {
      fx::load_config(file, env, sets).app.check_keys(known);
      return std::string();
    } catch (const fx::ConfigError& e) {
      return std::string(e.what());
    }
  };
  const std::string tail = ": expected one of nx, steps (did you mean 'steps'?), got 'stepz'";
  EXPECT_EQ(check(f, {}, {}), f + ":3:3: app.stepz" + tail);
  EXPECT_EQ(check("", {}, {"app.stepz=3"}), "--fx-set: app.stepz" + tail);
  EXPECT_EQ(check("", {"FX_CFG_APP__STEPZ=3"}, {}), "env FX_CFG_APP__STEPZ: app.stepz" + tail);
  EXPECT_EQ(check("", {}, {"app.steps=3"}), "");
}
}  // namespace
