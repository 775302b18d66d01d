// Fault injection: the schedule is deterministic, chaos is reproducible from
// its seed, a spec fires once (a recovered rank never re-kills itself), and
// real kills write their stamp first.
#include <fx/clock.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/inject.hpp>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <thread>
#include <tuple>

#include "config_test_util.hpp"

namespace {

using fx::Phase;
using fx::detail::FailedProcess;
using fx::detail::Injector;

fx::Config load_yaml(const std::string& yaml, const std::vector<std::string>& env = {}) {
  fx::test::ScratchDir d;
  return fx::load_config(d.file("i.yaml", yaml), env, {});
}

using Event =
    std::tuple<std::int64_t, std::string, int, int, std::string>;  // iteration, phase, logical, world, key

// A toy job: `active` logical ranks + `spares` spares, each with its own
// Injector; a kill replaces the victim with the first idle spare, every live
// process calls on_repair, and the run rolls back to the last multiple of
// `every` (the last checkpoint), as fx's runtime does.
std::vector<Event> simulate(const fx::Config& cfg, int active, int spares, std::int64_t iterations,
                            int every = 5) {
  const int world = active + spares;
  struct Proc {
    Injector inj;
    int logical;
    bool alive = true;
  };
  std::vector<int> spare_ranks;
  for (int w = active; w < world; ++w) spare_ranks.push_back(w);
  std::vector<Proc> procs;
  for (int w = 0; w < world; ++w)
    procs.push_back({Injector(cfg.inject, w, world, spare_ranks), w < active ? w : -1});
  std::vector<Event> events;
  std::vector<FailedProcess> dead;
  std::int64_t it = 0;
  Phase phase = Phase::compute;
  for (auto& p : procs) {
    const int w = static_cast<int>(&p - procs.data());
    p.inj.set_killer([&, w](const fx::InjectionSpec& s, int sig) {
      events.emplace_back(it, std::string(fx::to_string(phase)), procs[w].logical, w, s.key);
      if (sig != 0) {
        procs[w].alive = false;
        dead.push_back({w, procs[w].logical});
      }
    });
  }
  int guard = 0;
  while (it < iterations && ++guard < 10000) {
    for (Phase ph : {Phase::compute, Phase::halo, Phase::checkpoint}) {
      if (ph == Phase::checkpoint && it % every != 0) continue;
      for (auto& p : procs) {
        if (!p.alive) continue;
        phase = p.logical < 0 ? Phase::spare_idle : ph;
        p.inj.at(phase, it, p.logical, active, nullptr);
      }
    }
    if (!dead.empty()) {
      for (const auto& f : dead) {
        if (f.logical_rank < 0) continue;
        for (auto& p : procs) {
          if (p.alive && p.logical < 0) {
            p.logical = f.logical_rank;
            break;
          }
        }
      }
      for (auto& p : procs)
        if (p.alive) p.inj.on_repair(dead, it);
      dead.clear();
      it = it / every * every;  // roll back to the last checkpoint
      continue;
    }
    ++it;
  }
  return events;
}

TEST(Inject, PhaseNamesRoundTrip) {
  for (Phase p : {Phase::start, Phase::compute, Phase::halo, Phase::checkpoint, Phase::commit_save,
                  Phase::commit_posted, Phase::commit_agree, Phase::node_write, Phase::restore,
                  Phase::restore_load, Phase::start_restore, Phase::repair, Phase::repair_rebuild,
                  Phase::tryblock_commit, Phase::spare_idle, Phase::finalize}) {
    EXPECT_EQ(fx::from_string<Phase>(fx::to_string(p)), p);
  }
  EXPECT_FALSE(fx::from_string<Phase>("tryblock_commit"));
  EXPECT_EQ(fx::to_string(Phase::tryblock_commit), "tryblock-commit");
}

// Every active rank killed at one point, no spares: rank 0 leaves the
// verdict "aborted" first; a partial kill leaves none.
TEST(Inject, KillingTheWholeJobLeavesTheVerdict) {
  const std::string status = ::testing::TempDir() + "fx_inject_whole_job_status";
  ASSERT_EQ(setenv("FX_STATUS_FILE", status.c_str(), 1), 0);
  const std::string both =
      "inject:\n  failures:\n    - {target: 0, iteration: 5, phase: commit-save}\n"
      "    - {target: 1, iteration: 5, phase: commit-save}\n";
  for (const bool whole : {false, true}) {
    std::remove(status.c_str());
    const auto cfg = load_yaml(whole ? both : both.substr(0, both.rfind("    -")));
    Injector inj(cfg.inject, 0, 2, {});
    int killed = 0;
    inj.set_killer([&](const fx::InjectionSpec&, int) { ++killed; });
    inj.set_meet_timeout(0);  // rank 1 never comes here
    inj.at(Phase::commit_save, 5, 0, 2, nullptr);
    EXPECT_EQ(killed, 1);
    std::ifstream in(status);
    std::string code;
    in >> code;
    EXPECT_EQ(code, whole ? "4" : "") << (whole ? "whole job" : "rank 0 only");
  }
  std::remove(status.c_str());
  unsetenv("FX_STATUS_FILE");
}

// Kills at one point meet first: the victim that comes first waits for the
// other's mark (a late fellow), or dies alone once meet_timeout has passed;
// a kill at another point, or on the same process, is no fellow.
TEST(Inject, KillsAtOnePointMeetFirst) {
  fx::test::ScratchDir d;
  ASSERT_EQ(setenv("FX_STATUS_FILE", (d.path() + "/status").c_str(), 1), 0);
  const auto cfg = load_yaml(
      "inject:\n  failures:\n    - {target: 0, iteration: 5, phase: commit-save}\n"
      "    - {target: 1, iteration: 5, phase: commit-save}\n    - {target: 0, iteration: 9}\n"
      "    - {target: 1, iteration: 9, phase: compute}\n");
  std::vector<Injector> ranks;
  std::vector<double> died(2, -1);
  for (int r = 0; r < 2; ++r) {
    ranks.emplace_back(cfg.inject, r, 3, std::vector<int>{2});
    ranks.back().set_killer([&died, r](const fx::InjectionSpec&, int) { died[r] = fx::now(); });
  }
  const double t0 = fx::now();
  std::thread first([&] { ranks[0].at(Phase::commit_save, 5, 0, 2, nullptr); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  const double late = fx::now();
  ranks[1].at(Phase::commit_save, 5, 1, 2, nullptr);
  first.join();
  EXPECT_GE(died[0], late) << "rank 0 died before rank 1 reached the point";
  EXPECT_GE(died[1], late);

  // Another iteration's kill (9: its phase is not 9/compute's) waits for nobody.
  ranks[0].set_meet_timeout(30);
  died = {-1, -1};
  ranks[0].at(Phase::compute, 9, 0, 2, nullptr);
  EXPECT_GE(died[0], 0);
  EXPECT_LT(died[0] - t0, 10);

  // A fellow that never comes: its victim dies once the time is up (a new
  // job: the marks above are the first one's).
  ASSERT_EQ(setenv("FX_STATUS_FILE", (d.path() + "/status2").c_str(), 1), 0);
  const auto pair =
      load_yaml("inject:\n  failures:\n    - {target: 0, iteration: 3}\n    - {target: 1, iteration: 3}\n");
  Injector alone(pair.inject, 0, 2, {});
  double at = -1;
  alone.set_killer([&](const fx::InjectionSpec&, int) { at = fx::now(); });
  alone.set_meet_timeout(0.1);
  const double t1 = fx::now();
  alone.at(Phase::halo, 3, 0, 2, nullptr);
  EXPECT_GE(at - t1, 0.1);
  unsetenv("FX_STATUS_FILE");
}

TEST(Inject, SameConfigSameFailurePoints) {
  const std::string yaml =
      "spares: 2\ninject:\n  failures:\n    - {target: 1, iteration: 7}\n"
      "    - {target: 'buddy-of:1', iteration: 12, phase: halo, action: SIGTERM}\n"
      "    - {target: 3, iteration: 3, phase: checkpoint}\n";
  const auto a = simulate(load_yaml(yaml), 4, 2, 30);
  const auto b = simulate(load_yaml(yaml), 4, 2, 30);
  EXPECT_EQ(a, b);
  const std::vector<Event> want = {
      {5, "checkpoint", 3, 3, "inject.failures[2]"},  // first checkpoint at or after iteration 3
      {7, "compute", 1, 1, "inject.failures[0]"},
      {12, "halo", 2, 2, "inject.failures[1]"},  // buddy of 1 is 2
  };
  EXPECT_EQ(a, want);
}

TEST(Inject, RecoveredRankNeverReKillsItself) {
  // Rank 1 dies at 7; the run rolls back to 5 and passes 7 again with spare
  // world 4 as rank 1: nothing fires a second time.
  const auto ev =
      simulate(load_yaml("spares: 1\ninject:\n  failures:\n    - {target: 1, iteration: 7}\n"), 4, 1, 20);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(std::get<3>(ev[0]), 1);
}

TEST(Inject, RepeatKillsEachOccupantOnce) {
  const auto cfg =
      load_yaml("spares: 2\ninject:\n  failures:\n    - {target: 2, iteration: 4, repeat: 3, every: 6}\n");
  Injector probe(cfg.inject, 0, 6, {4, 5});
  ASSERT_EQ(probe.schedule().size(), 3u);
  EXPECT_EQ(probe.schedule()[1].iteration, 10);
  EXPECT_EQ(probe.schedule()[2].key, "inject.failures[0]#3");
  const auto ev = simulate(cfg, 4, 2, 30);
  ASSERT_EQ(ev.size(), 3u);  // the third kill finds no spare left but still fires
  EXPECT_EQ(std::get<0>(ev[0]), 4);
  EXPECT_EQ(std::get<3>(ev[0]), 2);
  EXPECT_EQ(std::get<0>(ev[1]), 10);
  EXPECT_EQ(std::get<3>(ev[1]), 4);
  EXPECT_EQ(std::get<0>(ev[2]), 16);
  EXPECT_EQ(std::get<3>(ev[2]), 5);
}

TEST(Inject, SpareAndWorldTargets) {
  const auto cfg = load_yaml(
      "spares: 2\ninject:\n  failures:\n    - {target: 'spare:1', phase: spare-idle}\n"
      "    - {target: 'world:0', iteration: 2}\n");
  const auto ev = simulate(cfg, 4, 2, 10);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(std::get<3>(ev[0]), 5);  // the second spare, at once
  EXPECT_EQ(std::get<2>(ev[0]), -1);
  EXPECT_EQ(std::get<3>(ev[1]), 0);
}

// spares.placement: spread over two nodes of 4 (world 0-3, 4-7) takes each
// node's highest rank: spares are world 3 and 7, logical ranks 0-5 the rest.
// spare:0 is world 3 (not world N+0 = 6, an active rank there), spare:1
// world 7, and the kill fires on that process.
TEST(Inject, SpareTargetIsTheRealSpareUnderSpread) {
  const std::vector<int> spares = {3, 7};
  fx::InjectionSpec s;
  s.target_kind = fx::TargetKind::spare;
  s.target = 0;
  EXPECT_TRUE(fx::detail::is_target(s, 3, -1, 6, 1, spares));
  EXPECT_FALSE(fx::detail::is_target(s, 6, 5, 6, 1, spares));
  EXPECT_FALSE(fx::detail::is_target(s, 6, -1, 6, 1, spares));
  s.target = 1;
  EXPECT_TRUE(fx::detail::is_target(s, 7, -1, 6, 1, spares));
  EXPECT_FALSE(fx::detail::is_target(s, 7, 2, 6, 1, spares));  // recruited: no longer a spare
  s.target = 2;
  EXPECT_FALSE(fx::detail::is_target(s, 7, -1, 6, 1, spares));  // no third spare

  const auto cfg =
      load_yaml("spares: 2\ninject:\n  failures:\n    - {target: 'spare:0', phase: spare-idle}\n");
  std::vector<int> fired;
  for (int w = 0; w < 8; ++w) {
    const bool spare = w == 3 || w == 7;
    Injector inj(cfg.inject, w, 8, spares);
    inj.set_killer([&, w](const fx::InjectionSpec&, int) { fired.push_back(w); });
    inj.at(spare ? Phase::spare_idle : Phase::compute, spare ? -1 : 0, spare ? -1 : w - (w > 3), 6, nullptr);
  }
  EXPECT_EQ(fired, std::vector<int>{3});
}

TEST(Inject, ChaosIsReproducibleFromItsSeed) {
  const std::string base =
      "spares: 3\ninject:\n  chaos: {mtbf_iterations: 20, max_failures: 3, start: 2, seed: ";
  const auto a = load_yaml(base + "7}\n");
  const auto b = load_yaml(base + "7}\n");
  const auto c = load_yaml(base + "8}\n");
  const auto sa = fx::detail::chaos_schedule(a.inject, 4);
  const auto sb = fx::detail::chaos_schedule(b.inject, 4);
  const auto sc = fx::detail::chaos_schedule(c.inject, 4);
  ASSERT_EQ(sa.size(), 3u);
  auto points = [](const std::vector<fx::InjectionSpec>& s) {
    std::vector<std::pair<std::int64_t, int>> v;
    for (const auto& x : s) v.emplace_back(x.iteration, x.target);
    return v;
  };
  EXPECT_EQ(points(sa), points(sb));
  EXPECT_NE(points(sa), points(sc));
  for (std::size_t i = 0; i < sa.size(); ++i) {
    EXPECT_GE(sa[i].iteration, 2);
    if (i) {
      EXPECT_GT(sa[i].iteration, sa[i - 1].iteration);
    }
    EXPECT_GE(sa[i].target, 0);
    EXPECT_LT(sa[i].target, 4);
  }
  // Pinned: the generator is splitmix64, defined bit for bit.
  EXPECT_EQ(points(sa), (std::vector<std::pair<std::int64_t, int>>{{11, 0}, {57, 3}, {69, 1}}));
  // Simulated runs from the same seed fail at the same points.
  EXPECT_EQ(simulate(a, 4, 3, 120), simulate(b, 4, 3, 120));
}

TEST(Inject, ChaosGapsHaveTheConfiguredMean) {
  fx::InjectConfig ic;
  ic.chaos = true;
  ic.chaos_seed = 1234;
  ic.chaos_mtbf_iterations = 40;
  ic.chaos_max_failures = 4000;
  ic.chaos_start = 0;
  const auto s = fx::detail::chaos_schedule(ic, 8);
  const double mean = static_cast<double>(s.back().iteration + 1) / static_cast<double>(s.size());
  EXPECT_NEAR(mean, 40.0, 2.0);
}

TEST(Inject, BitflipFiresOnceAndNotOnTheReplacement) {
  auto cfg = load_yaml(
      "spares: 1\ninject:\n  failures:\n    - {target: 2, iteration: 3, action: bitflip, member: u}\n"
      "    - {target: 2, iteration: 6}\n");
  const auto ev = simulate(cfg, 4, 1, 15);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(std::get<4>(ev[0]), "inject.failures[0]");
  EXPECT_EQ(std::get<4>(ev[1]), "inject.failures[1]");
}

// A member over a vector of doubles, by hand (no data-store internals).
fx::Member double_member(const std::string& name, std::vector<double>& u) {
  fx::Member m;
  m.name = name;
  m.type = "float64";
  m.extents = {u.size()};
  m.bytes = u.size() * sizeof(double);
  m.save = [&u](std::byte* out) { std::memcpy(out, u.data(), u.size() * sizeof(double)); };
  m.load = [&u](const std::byte* in) { std::memcpy(u.data(), in, u.size() * sizeof(double)); };
  return m;
}

TEST(Inject, FlipBitHalvesAFloat64) {
  std::vector<double> u(5, 1.5);
  const fx::Member m = double_member("u", u);
  const auto offset = fx::detail::flip_bit(m, -1, -1);
  EXPECT_EQ(offset, 2 * sizeof(double) + 52 / 8);
  EXPECT_DOUBLE_EQ(u[2], 0.75);  // 1.5 has the biased exponent 1023: its lowest bit goes 1 -> 0
  u[2] = 1.5;
  fx::detail::flip_bit(m, 0, 63);
  EXPECT_DOUBLE_EQ(u[0], -1.5);
  EXPECT_THROW(fx::detail::flip_bit(m, 5, 0), fx::UsageError);
  EXPECT_THROW(fx::detail::flip_bit(m, 0, 64), fx::UsageError);
}

TEST(Inject, BitflipOfAnUnknownMemberNamesTheSpec) {
  const auto cfg =
      load_yaml("inject:\n  failures:\n    - {target: 0, iteration: 1, action: bitflip, member: v}\n");
  std::vector<double> u(4, 1.0);
  const auto owned = fx::detail::StoreAccess::make();
  fx::DataStore& store = *owned;
  store.add_member(double_member("u", u));
  Injector inj(cfg.inject, 0, 1, {});
  try {
    inj.at(Phase::compute, 1, 0, 1, &store);
    FAIL();
  } catch (const fx::ConfigError& e) {
    EXPECT_EQ(std::string(e.what()).substr(std::string(e.what()).find(": inject")),
              ": inject.failures[0].member: expected a registered member (one of u), got 'v'");
  }
}

TEST(Inject, KillStampPath) {
  ::unsetenv("FX_STATUS_FILE");
  EXPECT_EQ(fx::detail::kill_stamp_path(3), "");
  ::setenv("FX_STATUS_FILE", "/tmp/fx-status.abc", 1);
  EXPECT_EQ(fx::detail::kill_stamp_path(3), "/tmp/fx-status.abc.kill.3");
  ::unsetenv("FX_STATUS_FILE");
}

TEST(Inject, KillStampReadsTimeKeyAndIteration) {
  const std::string base = ::testing::TempDir() + "fx-stamp-test";
  ::setenv("FX_STATUS_FILE", base.c_str(), 1);
  EXPECT_EQ(fx::detail::read_kill_stamp(2).time, -1);  // none written
  { std::ofstream(fx::detail::kill_stamp_path(2)) << "12.5 inject.failures[1] 45\n"; }
  const auto stamp = fx::detail::read_kill_stamp(2);
  EXPECT_EQ(stamp.time, 12.5);
  EXPECT_EQ(stamp.key, "inject.failures[1]");
  EXPECT_EQ(stamp.iteration, 45);
  std::remove(fx::detail::kill_stamp_path(2).c_str());
  ::unsetenv("FX_STATUS_FILE");
}

// The real thing, in a child process: stamp first, then the signal.
TEST(Inject, RealSignalAfterStamp) {
  for (const char* action : {"SIGTERM", "SIGKILL", "abort", "SIGSEGV"}) {
    SCOPED_TRACE(action);
    fx::test::ScratchDir d;
    const std::string status = d.path() + "/status";
    const auto cfg = load_yaml(std::string("inject:\n  failures:\n    - {target: 0, iteration: 2, action: ") +
                               action + "}\n");
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::setenv("FX_STATUS_FILE", status.c_str(), 1);
      std::signal(SIGSEGV, SIG_DFL);
      Injector inj(cfg.inject, 0, 1, {});
      for (int it = 0; it < 5; ++it) inj.at(Phase::compute, it, 0, 1, nullptr);
      ::_exit(0);  // not reached
    }
    int st = 0;
    ASSERT_EQ(::waitpid(pid, &st, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(st));
    const int want = std::string(action) == "SIGTERM"   ? SIGTERM
                     : std::string(action) == "SIGKILL" ? SIGKILL
                     : std::string(action) == "abort"   ? SIGABRT
                                                        : SIGSEGV;
    EXPECT_EQ(WTERMSIG(st), want);
    std::ifstream stamp(status + ".kill.0");
    double t = 0;
    EXPECT_TRUE(static_cast<bool>(stamp >> t));
    EXPECT_GT(t, 0);
  }
}

// SIGSTOP freezes the victim at its point (stamp first, as for a kill); a
// SIGCONT lets it carry on.
TEST(Inject, StopFreezesThenContinues) {
  fx::test::ScratchDir d;
  const std::string status = d.path() + "/status";
  const auto cfg = load_yaml("inject:\n  failures:\n    - {target: 0, iteration: 2, action: SIGSTOP}\n");
  const pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::setenv("FX_STATUS_FILE", status.c_str(), 1);
    Injector inj(cfg.inject, 0, 1, {});
    for (int it = 0; it < 5; ++it) inj.at(Phase::compute, it, 0, 1, nullptr);
    ::_exit(7);
  }
  int st = 0;
  ASSERT_EQ(::waitpid(pid, &st, WUNTRACED), pid);
  ASSERT_TRUE(WIFSTOPPED(st));
  EXPECT_TRUE(std::ifstream(status + ".kill.0").good());
  ::kill(pid, SIGCONT);
  ASSERT_EQ(::waitpid(pid, &st, 0), pid);
  ASSERT_TRUE(WIFEXITED(st));
  EXPECT_EQ(WEXITSTATUS(st), 7);
}

// A spec fires only in its launch attempt (FX_ATTEMPT, set by the
// supervisor; the first by default), and chaos only in the first.
TEST(Inject, SpecsFireInTheirAttempt) {
  const auto cfg = load_yaml(
      "inject:\n  failures:\n    - {target: 0, iteration: 2}\n    - {target: 1, iteration: 3, attempt: 2}\n"
      "  chaos: {mtbf_iterations: 5}\n");
  auto victims = [&](const char* attempt) {
    if (attempt)
      ::setenv("FX_ATTEMPT", attempt, 1);
    else
      ::unsetenv("FX_ATTEMPT");
    std::vector<std::pair<int, std::int64_t>> fired;
    for (int r = 0; r < 2; ++r) {
      Injector inj(cfg.inject, r, 2, {});
      inj.set_killer([&](const fx::InjectionSpec& s, int) { fired.emplace_back(r, s.iteration); });
      for (int it = 0; it < 4; ++it) inj.at(Phase::compute, it, r, 2, nullptr);
    }
    ::unsetenv("FX_ATTEMPT");
    return fired;
  };
  const auto first = victims(nullptr);
  EXPECT_TRUE(std::count(first.begin(), first.end(), std::make_pair(0, std::int64_t{2})));
  EXPECT_FALSE(std::count(first.begin(), first.end(), std::make_pair(1, std::int64_t{3})));
  const auto second = victims("2");
  EXPECT_EQ(second, (std::vector<std::pair<int, std::int64_t>>{{1, 3}}));
}

}  // namespace

// Specs that never fired (issue 29, item 5): a bit flip fired on rank 1
// alone counts as fired once the ranks' pending flags are reduced (the
// minimum); named in FX_INJECT's short form with key and origin, and
// nothing is said before that reduction (an aborted run).
TEST(Injector, UnfiredAfterSettling) {
  const auto cfg = load_yaml("spares: 0\n", {"FX_INJECT=target=1,iteration=3,action=bitflip,member=u;"
                                             "0@commit-posted;world:2@9/halo:SIGTERM"});
  std::vector<Injector> ranks;
  for (int r = 0; r < 3; ++r) ranks.emplace_back(cfg.inject, r, 3, std::vector<int>{});
  int fired = 0;
  ranks[1].set_killer([&](const fx::InjectionSpec&, int) { ++fired; });
  ranks[1].at(Phase::compute, 3, 1, 3, nullptr);
  ASSERT_EQ(fired, 1);
  EXPECT_TRUE(ranks[0].unfired().empty());  // not settled yet
  std::vector<int> min = ranks[0].pending_flags();
  for (const auto& r : ranks) {
    const auto flags = r.pending_flags();
    for (std::size_t i = 0; i < min.size(); ++i) min[i] = std::min(min[i], flags[i]);
  }
  ranks[0].fired_elsewhere(min);
  const auto unfired = ranks[0].unfired();
  ASSERT_EQ(unfired.size(), 2u);
  EXPECT_EQ(unfired[0].spec, "0@commit-posted");
  EXPECT_EQ(unfired[0].key, "inject.failures[1]");
  EXPECT_EQ(unfired[0].origin, "env FX_INJECT");
  EXPECT_EQ(unfired[1].spec, "world:2@9/halo:SIGTERM");
}
