// The run report: byte-for-byte against the checked-in reference (the
// schema), required keys and types, the summary, and write errors.
// Regenerate after an intended format change:
//   cmake --build <build> --target fx_regenerate_report_reference
#include <fx/report.hpp>
#include <fx/report_access.hpp>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "config_test_util.hpp"

namespace {

const std::string kReference = std::string(FX_CONFIG_TEST_DATA) + "/report_reference.yaml";

// A stencil run on 4 + 2 ranks: two kills, memory checkpoints every 5
// iterations, HDF5 every 4th of them, one TryBlock retried.
fx::Report reference_report() {
  fx::test::ScratchDir d;
  const auto f =
      d.file("stencil.yaml",
             "spares: 2\ncheckpoint:\n  memory: {every: 5}\n  hdf5: {every: 4, directory: ckpt}\n"
             "report: {path: runs/stencil-report.yaml}\n"
             "inject:\n  failures:\n    - {target: 2, iteration: 17}\n    - {target: 0, iteration: 31}\n"
             "app: {nx: 64, ny: 64, nz: 64, iterations: 40}\n");
  fx::Report r;
  r.set_platform({"node01", "Open MPI v5.0.11", "3.4.1", "2025-01-01T00:00:00Z"});
  r.set_app("stencil");
  r.set_config(fx::load_config(f, {}, {}), 4, 2, 6);
  r.set_phase_time("setup", 0.112);
  r.set_phase_time("initialize", 0.0204);
  r.set_phase_time("steps", 2.6371);
  r.set_phase_time("finish", 0.0031);
  r.set_phase_time("total", 2.81);
  double t = 0.15;
  const double dt = 0.05;
  auto run = [&](std::int64_t from, std::int64_t to) {
    for (std::int64_t it = from; it <= to; ++it) {
      r.add_progress(t, it);
      if (it % 5 == 0) {
        const bool disk = it % 20 == 0;
        r.add_checkpoint({it, t, fx::CheckpointLevel::memory, 2097152, 0.0011, 2097152 / 0.0011});
        if (disk)
          r.add_checkpoint({it, t + 0.0011, fx::CheckpointLevel::hdf5, 2097152, 0.0093, 2097152 / 0.0093});
      }
      t += dt;
    }
  };
  run(0, 17);
  const double kill1 = t - 0.02;
  r.add_failure({2, 2, "node01", kill1, 0.046, 17});
  fx::RecoveryRecord rec1;
  rec1.start = kill1 + 0.046;
  rec1.detect_s = 0.046;
  rec1.revoke_s = 0.0004;
  rec1.shrink_s = 0.0021;
  rec1.agree_s = 0.0009;
  rec1.rebuild_s = 0.0013;
  rec1.restore_s = 0.0042;
  rec1.total_s = 0.0089;
  rec1.failed_world_ranks = {2};
  rec1.failed_logical_ranks = {2};
  rec1.restored_iteration = 15;
  rec1.restored_level = fx::CheckpointLevel::memory;
  rec1.action = fx::RecoveryAction::replace;
  rec1.new_size = 4;
  r.add_recovery(rec1);
  t = rec1.start + rec1.total_s;
  run(15, 31);
  const double kill2 = t - 0.03;
  r.add_failure({0, 0, "node01", kill2, 0.051, 31});
  fx::RecoveryRecord rec2 = rec1;
  rec2.start = kill2 + 0.051;
  rec2.detect_s = 0.051;
  rec2.shrink_s = 0.0018;
  rec2.restore_s = 0.0039;
  rec2.total_s = 0.0083;
  rec2.failed_world_ranks = {0};
  rec2.failed_logical_ranks = {0};
  rec2.restored_iteration = 30;
  r.add_recovery(rec2);
  t = rec2.start + rec2.total_s;
  run(30, 40);
  r.add_tryblock({"halo-exchange", fx::TryBlockOutcome::committed, 2, "rank 1: timeout"});
  r.add_tryblock({"residual-check", fx::TryBlockOutcome::committed, 1, ""});
  r.set_result("checksum", 12345.678901234567);
  r.set_result("iterations", std::int64_t{40});
  r.set_result("verified", std::string("true"));
  fx::detail::ReportAccess::set_exit(r, fx::ExitCode::survived, "finished after surviving 2 failures");
  return r;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Report, MatchesReference) {
  const fx::Report r = reference_report();
  if (std::getenv("FX_REGENERATE") != nullptr) {
    r.write(kReference);
    std::printf("regenerated %s\n", kReference.c_str());
    return;
  }
  EXPECT_EQ(r.to_yaml(), slurp(kReference))
      << "the report format changed; if intended, run the fx_regenerate_report_reference target and update "
         "docs/config.md";
}

TEST(Report, ReferenceHasTheSchema) {
  const YAML::Node n = YAML::LoadFile(kReference);
  EXPECT_EQ(n["fx_report"].as<int>(), 1);
  for (const char* k : {"app", "exit", "platform", "phases", "failures", "recoveries", "checkpoints",
                        "tryblocks", "progress", "results", "config"})
    EXPECT_TRUE(n[k].IsDefined()) << k;
  EXPECT_EQ(n["exit"]["code"].as<int>(), 3);
  EXPECT_EQ(n["exit"]["status"].as<std::string>(), "survived");
  for (const char* k :
       {"hostname", "mpi_version", "kokkos_version", "date", "active_ranks", "spares", "world_size"})
    EXPECT_TRUE(n["platform"][k].IsScalar()) << k;
  ASSERT_TRUE(n["failures"].IsSequence());
  for (const auto& f : n["failures"]) {
    for (const char* k : {"world_rank", "logical_rank", "host", "time", "detection_latency", "iteration"})
      EXPECT_TRUE(f[k].IsScalar()) << k;
    EXPECT_GE(f["time"].as<double>(), 0);
  }
  for (const auto& r : n["recoveries"]) {
    for (const char* k : {"start", "action", "rounds", "new_size", "restored_iteration", "restored_level"})
      EXPECT_TRUE(r[k].IsScalar()) << k;
    EXPECT_TRUE(r["failed_world_ranks"].IsSequence());
    for (const char* k : {"detect", "revoke", "shrink", "agree", "rebuild", "restore", "total"})
      EXPECT_GE(r["seconds"][k].as<double>(), 0) << k;
  }
  for (const auto& c : n["checkpoints"]) {
    for (const char* k : {"iteration", "time", "level", "bytes", "seconds", "bandwidth"})
      EXPECT_TRUE(c[k].IsScalar()) << k;
  }
  for (const auto& p : n["progress"]) {
    ASSERT_EQ(p.size(), 2u);
    EXPECT_GE(p[0].as<double>(), 0);
    EXPECT_GE(p[1].as<long>(), 0);
  }
  EXPECT_EQ(n["config"]["spares"]["count"].as<int>(), 2);
  EXPECT_EQ(n["config"]["app"]["nx"].as<int>(), 64);
  // The echo is itself a configuration fx accepts.
  fx::test::ScratchDir d;
  YAML::Emitter e;
  e << n["config"];
  EXPECT_NO_THROW(fx::load_config(d.file("echo.yaml", e.c_str()), {}, {}));
}

TEST(Report, Summary) {
  const std::string s = reference_report().summary();
  if (std::getenv("FX_PRINT_SUMMARY")) std::fputs(s.c_str(), stdout);
  EXPECT_NE(s.find("fx: stencil, 4 active + 2 spare ranks on node01: survived (exit 3)"), std::string::npos)
      << s;
  EXPECT_NE(
      s.find("  failures: 2\n    logical rank 2 (world 2, node01) at 1.030 s, iteration 17, detected after "
             "46.0 ms"),
      std::string::npos)
      << s;
  EXPECT_NE(
      s.find("    #1 at 1.076 s: replace ranks [2] in 8.9 ms (revoke 0.4 ms, shrink 2.1 ms, agree 0.9 ms, "
             "rebuild 1.3 ms, restore 4.2 ms), resumed at iteration 15 from memory"),
      std::string::npos)
      << s;
  EXPECT_NE(s.find("  checkpoints (memory): 11, 2.0 MiB per rank each, 1.1 ms each, 1.8 GiB/s"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("  tryblocks: 2 committed, 0 aborted"), std::string::npos) << s;
  EXPECT_NE(s.find("  report: runs/stencil-report.yaml"), std::string::npos) << s;
}

TEST(Report, DetectsThePlatform) {
  fx::Report r;
  r.set_config(fx::Config{}, 1, 0, 1);
  EXPECT_FALSE(r.platform().hostname.empty());
  EXPECT_FALSE(r.platform().mpi_version.empty());
  EXPECT_FALSE(r.platform().kokkos_version.empty());
  EXPECT_EQ(r.platform().date.size(), 20u);
}

TEST(Report, UnwritablePathNamesIt) {
  fx::test::ScratchDir d;
  d.file("plain", "x\n");
  const std::string path = d.path() + "/plain/report.yaml";
  try {
    reference_report().write(path);
    FAIL() << "no error";
  } catch (const fx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot write the run report to '" + path + "': Not a directory");
  }
}

TEST(Report, WritesAndCreatesDirectories) {
  fx::test::ScratchDir d;
  const std::string path = d.path() + "/runs/a/report.yaml";
  const fx::Report r = reference_report();
  r.write(path);
  EXPECT_EQ(slurp(path), r.to_yaml());
}

}  // namespace

// Every arithmetic type an app may hold compiles and prints exactly.
TEST(Report, SetResultTakesEveryArithmeticType) {
  fx::Report r;
  r.set_result("int", 7);
  r.set_result("unsigned", 7u);
  r.set_result("u64", std::uint64_t{18446744073709551615ull});
  r.set_result("i64", std::int64_t{-9007199254740993});
  r.set_result("short", static_cast<short>(-3));
  r.set_result("size", std::size_t{42});
  r.set_result("float", 0.5f);
  r.set_result("double", 0.1);
  r.set_result("flag", true);
  r.set_result("literal", "text");
  const std::string yaml = r.to_yaml();
  for (const char* line :
       {"int: 7", "unsigned: 7", "u64: 18446744073709551615", "i64: -9007199254740993", "short: -3",
        "size: 42", "float: 0.5", "double: 0.1", "flag: true", "literal: text"}) {
    EXPECT_NE(yaml.find(line), std::string::npos) << line << " missing in\n" << yaml;
  }
}

// A recruited spare takes over a survivor's history: every section the
// report keeps comes through to_yaml() and adopt_history() unchanged.
TEST(Report, HistoryRoundTrip) {
  const fx::Report from = reference_report();
  fx::Report to;
  to.add_failure({9, 9, "elsewhere", 1.0, -1, 0});  // what the spare saw alone: replaced
  fx::detail::ReportAccess::adopt_history(to, from.history_yaml());
  const YAML::Node a = YAML::Load(from.to_yaml());
  const YAML::Node b = YAML::Load(to.to_yaml());
  for (const char* key : {"phases", "failures", "recoveries", "checkpoints", "tryblocks", "progress"}) {
    EXPECT_EQ(YAML::Dump(a[key]), YAML::Dump(b[key])) << key;
  }
}

TEST(Report, PlacementNamesTheHostsOfRanksCopiesAndSpares) {
  fx::Report r;
  fx::Placement p;
  p.buddy_distance = 1;
  const char* hosts[] = {"n1", "n2", "n1", "n1"};
  for (int q = 0; q < 4; ++q) p.ranks.push_back({q, q, hosts[q], (q + 1) % 4, hosts[(q + 1) % 4]});
  p.spares = {{5, "n2"}};
  r.set_placement(p);
  const YAML::Node n = YAML::Load(r.to_yaml());
  EXPECT_EQ(n["placement"]["buddy_distance"].as<int>(), 1);
  ASSERT_EQ(n["placement"]["ranks"].size(), 4u);
  EXPECT_EQ(n["placement"]["ranks"][1]["host"].as<std::string>(), "n2");
  EXPECT_EQ(n["placement"]["ranks"][1]["copy_holder"].as<int>(), 2);
  EXPECT_EQ(n["placement"]["ranks"][1]["copy_host"].as<std::string>(), "n1");
  EXPECT_EQ(n["placement"]["spares"][0]["host"].as<std::string>(), "n2");
  // 0 -> 1 and 1 -> 2 cross hosts; 2 -> 3 and 3 -> 0 stay on n1.
  EXPECT_NE(r.summary().find("  placement: n1: ranks 0 2 3; n2: ranks 1, spare world rank 5; buddy copies on "
                             "another host: 2 of 4 (distance 1)\n"),
            std::string::npos)
      << r.summary();
  // Spares on a host of their own; several named by their world ranks.
  p.spares = {{4, "n3"}, {5, "n3"}};
  r.set_placement(p);
  EXPECT_NE(r.summary().find("; n3: spare world ranks 4 5;"), std::string::npos) << r.summary();
}

// A repair that another failure interrupted (issue 29, item 5) is in the
// record, the summary and a recruited rank's adopted history.
TEST(Report, InterruptedRecoveryIsRecorded) {
  fx::Report r = reference_report();
  fx::RecoveryRecord cut = r.recoveries().front();
  cut.interrupted = true;
  cut.restored_iteration = -1;
  cut.restored_level = fx::CheckpointLevel::none;
  cut.restore_s = 0;
  r.add_recovery(cut);
  const YAML::Node n = YAML::Load(r.to_yaml());
  ASSERT_EQ(n["recoveries"].size(), 3u);
  EXPECT_FALSE(n["recoveries"][0]["interrupted"]);
  EXPECT_TRUE(n["recoveries"][2]["interrupted"].as<bool>());
  EXPECT_EQ(n["recoveries"][2]["restored_level"].as<std::string>(), "none");
  const std::string s = r.summary();
  EXPECT_NE(s.find("  recoveries: 3 (1 interrupted by another failure)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("restore 0.0 ms), interrupted by another failure before resuming (restored: none)\n"),
            std::string::npos)
      << s;
  fx::Report to;
  fx::detail::ReportAccess::adopt_history(to, r.history_yaml());
  ASSERT_EQ(to.recoveries().size(), 3u);
  EXPECT_TRUE(to.recoveries()[2].interrupted);
  EXPECT_FALSE(to.recoveries()[0].interrupted);
}

// Issue 40, item 1: a repair that completed and was then ended by a policy
// is in the record and the summary (it said recoveries: 0).
TEST(Report, StoppedRecoveryIsRecorded) {
  fx::Report r = reference_report();
  fx::RecoveryRecord last = r.recoveries().front();
  last.stopped = true;
  last.restored_iteration = 290;
  last.restored_level = fx::CheckpointLevel::hdf5;
  r.add_recovery(last);
  const YAML::Node n = YAML::Load(r.to_yaml());
  ASSERT_EQ(n["recoveries"].size(), 3u);
  EXPECT_FALSE(n["recoveries"][0]["stopped"]);
  EXPECT_TRUE(n["recoveries"][2]["stopped"].as<bool>());
  const std::string s = r.summary();
  EXPECT_NE(s.find("  recoveries: 3 (the last one stopped by policy)\n"), std::string::npos) << s;
  EXPECT_NE(s.find("then stopped by policy before resuming (restored: iteration 290 from hdf5)\n"),
            std::string::npos)
      << s;
  fx::Report to;
  fx::detail::ReportAccess::adopt_history(to, r.history_yaml());
  ASSERT_EQ(to.recoveries().size(), 3u);
  EXPECT_TRUE(to.recoveries()[2].stopped);
}

// Issue 40, item 1: a cold restart names the version and level it started
// from and the versions it passed over (the report said nothing of it).
TEST(Report, ColdRestartIsRecorded) {
  fx::Report r = reference_report();
  EXPECT_EQ(r.summary().find("  start:"), std::string::npos);  // from scratch, nothing passed over
  r.set_start({fx::CheckpointLevel::node,
               180,
               0,
               {{fx::CheckpointLevel::hdf5, 200, "unusable on at least one rank"},
                {fx::CheckpointLevel::node, 190, "failed its checks"}}});
  const YAML::Node n = YAML::Load(r.to_yaml());
  EXPECT_EQ(n["start"]["level"].as<std::string>(), "node");
  EXPECT_EQ(n["start"]["iteration"].as<int>(), 180);
  ASSERT_EQ(n["start"]["skipped"].size(), 2u);
  EXPECT_EQ(n["start"]["skipped"][0]["level"].as<std::string>(), "hdf5");
  EXPECT_EQ(n["start"]["skipped"][1]["iteration"].as<int>(), 190);
  const std::string s = r.summary();
  EXPECT_NE(s.find("  start: cold restart at iteration 180 from node; passed over: hdf5 iteration 200 "
                   "(unusable on at least one rank), node iteration 190 (failed its checks)\n"),
            std::string::npos)
      << s;
  fx::Report to;
  fx::detail::ReportAccess::adopt_history(to, r.history_yaml());
  EXPECT_EQ(to.start().level, fx::CheckpointLevel::node);
  EXPECT_EQ(to.start().iteration, 180);
  ASSERT_EQ(to.start().skipped.size(), 2u);
  EXPECT_EQ(to.start().skipped[1].why, "failed its checks");
  r.set_start(
      {fx::CheckpointLevel::none, 0, 0, {{fx::CheckpointLevel::hdf5, 200, "unusable on at least one rank"}}});
  EXPECT_NE(r.summary().find("  start: from scratch; passed over: hdf5 iteration 200"), std::string::npos);
}

// An abort inside a repair leaves a layout with ranks nobody holds (issue
// 29, item 5: "placement: : ranks -1", copies "on another host" on one
// host): the last complete layout is reported, marked as earlier.
TEST(Report, PlacementOfAnAbortedRepairKeepsTheLastComplete) {
  fx::Report r;
  EXPECT_EQ(r.summary().find("placement"), std::string::npos);
  fx::Placement p;
  p.buddy_distance = 1;
  for (int q = 0; q < 4; ++q) p.ranks.push_back({q, q, "n1", (q + 1) % 4, "n1"});
  r.set_placement(p);
  fx::Placement torn = p;
  torn.ranks[1] = fx::RankPlacement{};
  torn.ranks[0].copy_host.clear();
  r.set_placement(torn);
  const std::string s = r.summary();
  EXPECT_NE(s.find("  placement (before the repair the run ended in): n1: ranks 0 1 2 3; buddy copies on "
                   "another host: 0 of 4 (distance 1)\n"),
            std::string::npos)
      << s;
  const YAML::Node n = YAML::Load(r.to_yaml());
  EXPECT_TRUE(n["placement"]["before_last_repair"].as<bool>());
  EXPECT_EQ(n["placement"]["ranks"][1]["logical"].as<int>(), 1);
  fx::Report none;
  none.set_placement(torn);
  EXPECT_NE(none.summary().find("  placement: not known (the run ended in a repair before any rank had "
                                "stepped)\n"),
            std::string::npos)
      << none.summary();
  EXPECT_FALSE(YAML::Load(none.to_yaml())["placement"]);
  r.set_placement(p);  // a complete layout again: current, unmarked
  EXPECT_FALSE(YAML::Load(r.to_yaml())["placement"]["before_last_repair"]);
}
