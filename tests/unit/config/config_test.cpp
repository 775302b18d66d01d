// Good configurations: values, precedence (file < env < --fx-set), argv
// handling, the app section helpers, and every example in configs/.
#include <fx/config_yaml.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "config_test_util.hpp"

namespace {

using fx::test::ScratchDir;

TEST(Config, DefaultsWithoutAnything) {
  const fx::Config c = fx::load_config("", {}, {});
  EXPECT_EQ(c.spares.count, 0);
  EXPECT_EQ(c.spares.idle, fx::SpareIdle::sleep);
  EXPECT_EQ(c.recovery.on_exhausted, fx::ExhaustedPolicy::abort);
  EXPECT_EQ(c.checkpoint.memory.every, 0);
  EXPECT_EQ(c.log_level, fx::log::Level::info);
  EXPECT_TRUE(c.report_path.empty());
  EXPECT_TRUE(c.inject.failures.empty());
  EXPECT_TRUE(c.app.keys().empty());
  EXPECT_TRUE(c.source.empty());
}

TEST(Config, EmptyFileIsDefaults) {
  ScratchDir d;
  const fx::Config c = fx::load_config(d.file("e.yaml", "# nothing\n"), {}, {});
  EXPECT_EQ(c.spares.count, 0);
}

TEST(Config, ReadsEverySection) {
  ScratchDir d;
  const auto f = d.file("all.yaml", R"(
spares:
  count: 2
  idle: block
  poll_interval_ms: 0.5
  placement: spread
recovery: {on_exhausted: shrink, max_rounds: 3, timeout_s: 12.5, max_failures: 7}
detector: {period_s: 0.5, timeout_s: 2}
checkpoint:
  memory: {every: 10, buddy_distance: 2, scheme: parity, parity_group: 3, depth: 3}
  hdf5: {every: 4, directory: ckpt, keep: 3, restart: false}
tryblock: {soft_retries: 5, timeout_s: 1.5, rollback: no}
reinit: {enabled: false, mode: sync}
log: {level: debug}
report: {path: out/run.yaml}
inject:
  failures:
    - {target: 1, iteration: 7}
    - {target: 'buddy-of:0', phase: halo, action: SIGTERM}
    - {target: 'spare:1', phase: spare-idle, action: abort}
    - {target: 'world:3', iteration: 2, phase: checkpoint, action: SIGSEGV, repeat: 2, every: 5}
    - {target: 0, iteration: 4, action: bitflip, member: u, element: 3, bit: 60}
  chaos: {seed: 42, mtbf_iterations: 25, max_failures: 3, start: 5, action: sigkill, phase: compute}
app:
  nx: 64
  name: demo
)");
  const fx::Config c = fx::load_config(f, {}, {});
  EXPECT_EQ(c.source, f);
  EXPECT_EQ(c.spares.count, 2);
  EXPECT_EQ(c.spares.idle, fx::SpareIdle::block);
  EXPECT_DOUBLE_EQ(c.spares.poll_interval_ms, 0.5);
  EXPECT_EQ(c.spares.placement, fx::SparePlacement::spread);
  EXPECT_EQ(c.recovery.on_exhausted, fx::ExhaustedPolicy::shrink);
  EXPECT_EQ(c.recovery.max_rounds, 3);
  EXPECT_DOUBLE_EQ(c.recovery.timeout_s, 12.5);
  EXPECT_EQ(c.recovery.max_failures, 7);
  EXPECT_DOUBLE_EQ(c.detector.period_s, 0.5);
  EXPECT_DOUBLE_EQ(c.detector.timeout_s, 2);
  EXPECT_EQ(c.checkpoint.memory.every, 10);
  EXPECT_EQ(c.checkpoint.memory.buddy_distance, 2);
  EXPECT_EQ(c.checkpoint.memory.scheme, fx::MemoryScheme::parity);
  EXPECT_EQ(c.checkpoint.memory.parity_group, 3);
  EXPECT_EQ(c.checkpoint.memory.depth, 3);
  EXPECT_EQ(c.checkpoint.hdf5.every, 4);
  EXPECT_EQ(c.checkpoint.hdf5.directory, "ckpt");
  EXPECT_EQ(c.checkpoint.hdf5.keep, 3);
  EXPECT_FALSE(c.checkpoint.hdf5.restart);
  EXPECT_EQ(c.tryblock.soft_retries, 5);
  EXPECT_FALSE(c.tryblock.rollback);
  EXPECT_EQ(c.reinit.mode, fx::ReinitMode::sync);
  EXPECT_EQ(c.log_level, fx::log::Level::debug);
  EXPECT_EQ(c.report_path, "out/run.yaml");
  ASSERT_EQ(c.inject.failures.size(), 5u);
  const auto& f0 = c.inject.failures[0];
  EXPECT_EQ(f0.target_kind, fx::TargetKind::rank);
  EXPECT_EQ(f0.target, 1);
  EXPECT_EQ(f0.iteration, 7);
  EXPECT_EQ(f0.action, fx::InjectAction::sigkill);
  EXPECT_EQ(f0.origin, f + ":18:16");
  EXPECT_EQ(f0.key, "inject.failures[0]");
  EXPECT_EQ(c.inject.failures[1].target_kind, fx::TargetKind::buddy_of);
  EXPECT_EQ(c.inject.failures[1].phase, fx::Phase::halo);
  EXPECT_EQ(c.inject.failures[1].action, fx::InjectAction::sigterm);
  EXPECT_EQ(c.inject.failures[2].target_kind, fx::TargetKind::spare);
  EXPECT_EQ(c.inject.failures[2].target, 1);
  EXPECT_EQ(c.inject.failures[2].action, fx::InjectAction::abort);
  EXPECT_EQ(c.inject.failures[3].target_kind, fx::TargetKind::world);
  EXPECT_EQ(c.inject.failures[3].repeat, 2);
  EXPECT_EQ(c.inject.failures[3].every, 5);
  EXPECT_EQ(c.inject.failures[4].member, "u");
  EXPECT_EQ(c.inject.failures[4].element, 3);
  EXPECT_EQ(c.inject.failures[4].bit, 60);
  EXPECT_TRUE(c.inject.chaos);
  EXPECT_EQ(c.inject.chaos_seed, 42u);
  EXPECT_DOUBLE_EQ(c.inject.chaos_mtbf_iterations, 25);
  EXPECT_EQ(c.inject.chaos_max_failures, 3);
  EXPECT_EQ(c.inject.chaos_start, 5);
  EXPECT_EQ(c.inject.chaos_phase, fx::Phase::compute);
  EXPECT_EQ(c.inject.buddy_distance, 2);
  EXPECT_EQ(c.app.get("nx", 0), 64);
  EXPECT_NO_THROW(fx::validate_against_world(c, 6));
}

TEST(Config, SparesShorthand) {
  ScratchDir d;
  const fx::Config c = fx::load_config(d.file("s.yaml", "spares: 3\n"), {}, {});
  EXPECT_EQ(c.spares.count, 3);
  EXPECT_EQ(c.origin_of("spares.count").key, "spares");
}

// Under `spread` which world ranks are spares depends on the hosts: a bit
// flip aimed at world rank 5 of 4+2 may hit an active rank (bitflip_on_a_spare
// in config_errors_test refuses it under `last`).
TEST(Config, BitflipOnAWorldRankUnderSpreadIsLeftToTheHosts) {
  ScratchDir d;
  const fx::Config c =
      fx::load_config(d.file("b.yaml",
                             "spares: {count: 2, placement: spread}\ninject:\n  failures:\n"
                             "    - {target: 'world:5', iteration: 3, action: bitflip, member: u}\n"),
                      {}, {});
  EXPECT_NO_THROW(fx::validate_against_world(c, 6));
}

TEST(Config, PrecedenceFileEnvCommandLine) {
  ScratchDir d;
  const auto f =
      d.file("p.yaml", "log:\n  level: warn\nreport:\n  path: file.yaml\nrecovery:\n  max_rounds: 4\n");
  // file only
  EXPECT_EQ(fx::load_config(f, {}, {}).log_level, fx::log::Level::warn);
  // env beats file
  auto c = fx::load_config(f, {"FX_LOG_LEVEL=error", "FX_REPORT=" + d.path() + "/env.yaml"}, {});
  EXPECT_EQ(c.log_level, fx::log::Level::error);
  EXPECT_EQ(c.report_path, d.path() + "/env.yaml");
  EXPECT_EQ(c.origin_of("log.level").position, "env FX_LOG_LEVEL");
  EXPECT_EQ(c.origin_of("recovery.max_rounds").position, f + ":6:15");
  // command line beats env
  c = fx::load_config(f, {"FX_LOG_LEVEL=error"}, {"log.level=trace", "recovery.max_rounds=9"});
  EXPECT_EQ(c.log_level, fx::log::Level::trace);
  EXPECT_EQ(c.recovery.max_rounds, 9);
  EXPECT_EQ(c.origin_of("log.level").position, "--fx-set");
}

TEST(Config, LauncherSparesOverrideFileWithANote) {
  ScratchDir d;
  const auto f = d.file("s.yaml", "spares: 2\n");
  auto c = fx::load_config(f, {"FX_SPARES=1"}, {});
  EXPECT_EQ(c.spares.count, 1);
  ASSERT_EQ(c.notes.size(), 1u);
  EXPECT_EQ(c.notes[0], "env FX_SPARES=1 overrides spares: 2 from " + f);
  c = fx::load_config(f, {"FX_SPARES=2"}, {});
  EXPECT_TRUE(c.notes.empty());
  // --fx-set wins over both.
  c = fx::load_config(f, {"FX_SPARES=1"}, {"spares=3"});
  EXPECT_EQ(c.spares.count, 3);
}

TEST(Config, GenericEnvAndOtherVariablesIgnored) {
  const auto c = fx::load_config("",
                                 {"FX_CFG_CHECKPOINT__MEMORY__EVERY=7", "FX_CFG_APP__NX=32", "FX_TIMEOUT=60",
                                  "FX_STATUS_FILE=/tmp/x", "PATH=/bin"},
                                 {});
  EXPECT_EQ(c.checkpoint.memory.every, 7);
  EXPECT_EQ(c.app.get("nx", 0), 32);
}

TEST(Config, CompactInjectSyntax) {
  const auto c = fx::load_config("",
                                 {"FX_INJECT=2@5; buddy-of:1@halo:SIGTERM; spare@spare-idle; "
                                  "target=3,iteration=9,action=abort; 0@4/checkpoint"},
                                 {});
  ASSERT_EQ(c.inject.failures.size(), 5u);
  EXPECT_EQ(c.inject.failures[0].target, 2);
  EXPECT_EQ(c.inject.failures[0].iteration, 5);
  EXPECT_EQ(c.inject.failures[0].action, fx::InjectAction::sigkill);
  EXPECT_EQ(c.inject.failures[0].origin, "env FX_INJECT");
  EXPECT_EQ(c.inject.failures[1].target_kind, fx::TargetKind::buddy_of);
  EXPECT_EQ(c.inject.failures[1].phase, fx::Phase::halo);
  EXPECT_EQ(c.inject.failures[1].action, fx::InjectAction::sigterm);
  EXPECT_EQ(c.inject.failures[2].target_kind, fx::TargetKind::spare);
  EXPECT_EQ(c.inject.failures[2].phase, fx::Phase::spare_idle);
  EXPECT_EQ(c.inject.failures[3].action, fx::InjectAction::abort);
  EXPECT_EQ(c.inject.failures[4].iteration, 4);
  EXPECT_EQ(c.inject.failures[4].phase, fx::Phase::checkpoint);
}

TEST(Config, SetTakesYamlValues) {
  const auto c = fx::load_config("", {}, {"inject.failures=[{target: 1, iteration: 3}]", "app.sizes=[1, 2]"});
  ASSERT_EQ(c.inject.failures.size(), 1u);
  EXPECT_EQ(c.inject.failures[0].origin, "--fx-set");
  EXPECT_EQ(fx::detail::section_node(c.app)["sizes"].size(), 2u);
}

TEST(Config, ArgvKeepsTheAppsArguments) {
  ScratchDir d;
  const auto f = d.file("a.yaml", "spares: 1\n");
  std::vector<std::string> args = {
      "app",       "-x",       "--fx-config",    f,
      "input.dat", "--fx-set", "log.level=warn", "--fx-set=recovery.max_rounds=2",
      "--verbose"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  const fx::Config c = fx::load_config(argc, argv.data());
  ASSERT_EQ(argc, 4);
  EXPECT_STREQ(argv[0], "app");
  EXPECT_STREQ(argv[1], "-x");
  EXPECT_STREQ(argv[2], "input.dat");
  EXPECT_STREQ(argv[3], "--verbose");
  EXPECT_EQ(argv[4], nullptr);
  EXPECT_EQ(c.spares.count, 1);
  EXPECT_EQ(c.log_level, fx::log::Level::warn);
  EXPECT_EQ(c.recovery.max_rounds, 2);
}

TEST(Config, AppLookups) {
  ScratchDir d;
  const auto f = d.file("app.yaml", "app:\n  nx: 128\n  tol: 1e-8\n  name: grid\n  ok: true\n  bad: big\n");
  const fx::Config c = fx::load_config(f, {}, {"app.ny=16"});
  EXPECT_EQ(c.app.get("nx", 1), 128);
  EXPECT_EQ(c.app.get("ny", 1), 16);
  EXPECT_EQ(c.app.get("nz", 7), 7);
  EXPECT_DOUBLE_EQ(c.app.get("tol", 0.0), 1e-8);
  EXPECT_EQ(c.app.get("name", ""), "grid");
  EXPECT_TRUE(c.app.get("ok", false));
  EXPECT_EQ(c.app.get<std::uint64_t>("nx", 0), 128u);
  EXPECT_EQ(c.app.get<std::int16_t>("nx", 0), 128);
  EXPECT_TRUE(c.app.has("bad"));
  EXPECT_FALSE(c.app.has("nz"));
  EXPECT_EQ(c.app.keys(), (std::vector<std::string>{"nx", "tol", "name", "ok", "bad", "ny"}));
  EXPECT_EQ(c.app.position("nx"), f + ":2:7");
  EXPECT_EQ(c.app.position("ny"), "--fx-set");
  try {
    c.app.get("bad", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), f + ":6:8: app.bad: expected an integer, got 'big'");
  }
  const fx::Config c2 = fx::load_config(f, {}, {"app.nx=huge"});
  try {
    c2.app.get("nx", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(e.what(), "--fx-set: app.nx: expected an integer, got 'huge'");
  }
  // An integer out of the type's range names the range.
  const fx::Config c3 = fx::load_config(f, {}, {"app.nx=99999999999", "app.ny=-1"});
  try {
    c3.app.get("nx", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "--fx-set: app.nx: expected an integer from -2147483648 to 2147483647, got '99999999999'");
  }
  try {
    c3.app.get<std::uint16_t>("ny", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(e.what(), "--fx-set: app.ny: expected an integer >= 0, got '-1'");
  }
  try {
    c3.app.get<std::uint16_t>("nx", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(e.what(), "--fx-set: app.nx: expected an integer from 0 to 65535, got '99999999999'");
  }
  // Beyond 64 bits it is still a value out of range, not "no integer" or ">= 0" (issue 40).
  const fx::Config c4 = fx::load_config(f, {}, {"app.big=99999999999999999999"});
  try {
    c4.app.get<std::int64_t>("big", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "--fx-set: app.big: expected an integer from -9223372036854775808 to "
                 "9223372036854775807, got '99999999999999999999'");
  }
  try {
    c4.app.get<std::uint64_t>("big", 1);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_STREQ(
        e.what(),
        "--fx-set: app.big: expected an integer from 0 to 18446744073709551615, got '99999999999999999999'");
  }
  try {
    c.app.check_keys({"nx", "ny", "tol", "name", "ok", "bda"});
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()),
              f + ":6:3: app.bad: expected one of nx, ny, tol, name, ok, bda (did you mean "
                  "'bda'?), got 'bad'");
  }
  try {
    c.app.reject("nx", "a multiple of 256");
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()), f + ":2:7: app.nx: expected a multiple of 256, got '128'");
  }
}

// Maps inside the app section, the integer types' bounds, and the app
// section of a file read on its own (fx::load_app_section, the baselines').
// The free functions before fx::ConfigSection still work for one release
// (deprecated: CHANGELOG.md's migration note).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
TEST(Config, DeprecatedFreeFunctions) {
  ScratchDir d;
  const auto f = d.file("old.yaml", "app:\n  nx: 12\n  name: g\n");
  const fx::Config c = fx::load_config(f, {}, {});
  EXPECT_EQ(fx::config_get<int>(c.app, "nx", 64, c), 12);
  EXPECT_EQ(fx::config_get<std::string>(c.app, "name", "x", std::string("--config")), "g");
  EXPECT_EQ(fx::config_get<double>(c.app, "tol", 0.5, c), 0.5);
  EXPECT_NO_THROW(fx::config_check_keys(c, {"nx", "name"}));
  EXPECT_THROW(fx::config_check_keys(c.app, {"nx"}, "--config"), fx::ConfigError);
  EXPECT_THROW(fx::config_reject(c.app, "nx", "an even number", "--config"), fx::ConfigError);
}
#pragma GCC diagnostic pop

TEST(Config, AppSections) {
  ScratchDir d;
  const auto f =
      d.file("nest.yaml", "spares: 1\napp:\n  grid: {nx: 300, ny: -1}\n  list: [1, 2]\n  name: g\n");
  const fx::Config c = fx::load_config(f, {"FX_CFG_APP__GRID__NZ=4"}, {});
  const fx::ConfigSection grid = c.app.section("grid");
  EXPECT_EQ(grid.path(), "app.grid");
  EXPECT_EQ(grid.get("nx", 0), 300);
  EXPECT_EQ(grid.get("nz", 0), 4);
  EXPECT_EQ(grid.position("nz"), "env FX_CFG_APP__GRID__NZ");
  EXPECT_TRUE(c.app.section("none").keys().empty());
  auto error = [](auto&& call) {
    try {
      call();
      return std::string();
    } catch (const fx::ConfigError& e) {
      return std::string(e.what());
    }
  };
  EXPECT_EQ(error([&] { grid.get<std::int8_t>("nx", 0); }),
            f + ":3:14: app.grid.nx: expected an integer from -128 to 127, got '300'");
  EXPECT_EQ(error([&] { grid.get<std::uint64_t>("ny", 0); }),
            f + ":3:23: app.grid.ny: expected an integer >= 0, got '-1'");
  EXPECT_EQ(error([&] { c.app.section("list"); }), f + ":4:9: app.list: expected a map, got '[1, 2]'");
  EXPECT_EQ(error([&] { c.app.get("list", ""); }), f + ":4:9: app.list: expected a string, got '[1, 2]'");
  EXPECT_EQ(error([&] {
              grid.check_keys({"nx", "ny"});
            }),
            "env FX_CFG_APP__GRID__NZ: app.grid.nz: expected one of nx, ny (did you mean 'nx'?), got 'nz'");

  const fx::ConfigSection alone = fx::load_app_section(f, "--config");
  EXPECT_EQ(alone.get("name", ""), "g");
  EXPECT_EQ(alone.position("name"), f + ":5:9");
  EXPECT_FALSE(alone.section("grid").has("nz"));
  EXPECT_TRUE(fx::load_app_section(d.file("no_app.yaml", "spares: 1\n"), "--config").keys().empty());
  EXPECT_EQ(error([&] { fx::load_app_section(d.path() + "/missing.yaml", "--config"); }),
            "--config: " + d.path() + "/missing.yaml: expected a readable YAML file, got '" + d.path() +
                "/missing.yaml' (No such file or directory)");
  const auto bad = d.file("bad_app.yaml", "app: [1]\n");
  EXPECT_EQ(error([&] { fx::load_app_section(bad, "--config"); }),
            bad + ":1:6: app: expected a map (the application's settings), got '[1]'");
}

// The echo in a report is itself a valid configuration that loads to the same echo.
TEST(Config, EchoRoundTrips) {
  ScratchDir d;
  const auto f = d.file("rt.yaml",
                        "spares: 2\ncheckpoint: {memory: {every: 5}}\ninject:\n  failures:\n"
                        "    - {target: 1, iteration: 3, repeat: 2, every: 4}\n"
                        "  chaos: {seed: 9, mtbf_iterations: 10}\napp: {nx: 8}\n");
  const std::string echo = YAML::Dump(fx::detail::config_to_yaml(fx::load_config(f, {}, {})));
  const auto f2 = d.file("echo.yaml", echo);
  EXPECT_EQ(YAML::Dump(fx::detail::config_to_yaml(fx::load_config(f2, {}, {}))), echo);
}

// Every example policy loads and fits a job of 4 active ranks plus its spares.
TEST(Config, EveryExampleInConfigsIsValid) {
  std::vector<std::string> files;
  for (const auto& e : std::filesystem::directory_iterator(FX_CONFIGS_DIR))
    if (e.path().extension() == ".yaml") files.push_back(e.path().string());
  std::sort(files.begin(), files.end());
  for (const char* want : {"stencil", "minife", "chaos", "tryblock", "reinit", "shrink"}) {
    EXPECT_TRUE(std::any_of(files.begin(), files.end(),
                            [&](const std::string& p) { return std::filesystem::path(p).stem() == want; }))
        << "configs/" << want << ".yaml is missing";
  }
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    try {
      const fx::Config c = fx::load_config(f, {}, {});
      fx::validate_against_world(c, 4 + c.spares.count);
      EXPECT_FALSE(c.app.keys().empty()) << "each example has an app: section";
    } catch (const fx::ConfigError& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

}  // namespace
