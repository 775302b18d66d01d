// A 3D Jacobi solver in Reinit mode: after a failure every process starts
// solve() again and loads its checkpoint. The answer must equal the serial
// failure-free replay bit for bit; rank 0 also checks how often each process
// entered (new / reinited / restarted) against the repairs.
//
// app: nx ny nz iterations (YAML `app:` or FX_CFG_APP__*); flags after fx's:
//   --expect-recoveries K  --expect-deferred (sync: a caught error was
//   carried to the next test_failure)  --expect-level memory|hdf5|none (the
//   last restore)  --misuse nested|mode|finalize
//   --preset-sync (fx::set_reinit_mode(sync) before fx::reinit)
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <cstring>
#include <string>
#include <vector>

#include "jacobi.hpp"

namespace {

struct Options {
  int expect_recoveries = -1;
  bool expect_deferred = false;
  bool preset_sync = false;
  std::string misuse;
  std::string expect_level;  // where the last restore came from: memory | hdf5 | none
};

// Across entries: solve()'s locals die with each rollback.
struct Tally {
  int fresh = 0, reinited = 0, restarted = 0;
  int deferred = 0;  // sync: errors caught and carried to test_failure
};
Tally g_tally;

[[noreturn]] void fail(const std::string& what) { FX_THROW(fx::Error, "reinit_app: " + what); }

Options parse(const fx::Context& ctx) {
  Options o;
  CLI::App cli("reinit_app");
  cli.add_option("--expect-recoveries", o.expect_recoveries);
  cli.add_flag("--expect-deferred", o.expect_deferred);
  cli.add_flag("--preset-sync", o.preset_sync);
  cli.add_option("--misuse", o.misuse);
  cli.add_option("--expect-level", o.expect_level);
  fx_test::parse_app_args(cli, ctx);
  return o;
}

void expect_usage_error(const std::function<void()>& call, const char* words) {
  try {
    call();
  } catch (const fx::UsageError& e) {
    if (std::strstr(e.what(), words) == nullptr) fail(std::string("unexpected UsageError: ") + e.what());
    if (fx::log::enabled(fx::log::Level::info)) std::printf("reinit_app: misuse rejected: %s\n", e.what());
    return;
  }
  fail(std::string("expected a UsageError mentioning '") + words + "'");
}

void solve(fx::Context& ctx, fx::ReinitState state);

void misuse(const Options& o) {
  if (o.misuse == "nested") {
    expect_usage_error([] { fx::reinit(0, nullptr, solve); }, "already active");
  } else if (o.misuse == "mode") {
    fx::set_reinit_mode(fx::reinit_mode());  // the mode in force: allowed
    const auto other =
        fx::reinit_mode() == fx::ReinitMode::sync ? fx::ReinitMode::async : fx::ReinitMode::sync;
    expect_usage_error([other] { fx::set_reinit_mode(other); }, "cannot change");
  }
}

// Ghost planes from the neighbours below and above.
void exchange(const fx::Context& ctx, const jacobi::Grid& g, int planes, std::vector<double>& u) {
  const auto& c = ctx.comm();
  const int r = ctx.rank(), p = ctx.size();
  const std::size_t pl = g.plane();
  std::vector<fx::Request> reqs;
  if (r > 0) {
    reqs.push_back(c.irecv(u.data(), pl, r - 1, 1));
    reqs.push_back(c.isend(u.data() + pl, pl, r - 1, 0));
  }
  if (r + 1 < p) {
    reqs.push_back(c.irecv(u.data() + (static_cast<std::size_t>(planes) + 1) * pl, pl, r + 1, 0));
    reqs.push_back(c.isend(u.data() + static_cast<std::size_t>(planes) * pl, pl, r + 1, 1));
  }
  c.wait_all(reqs);
}

void solve(fx::Context& ctx, fx::ReinitState state) {
  const Options opt = parse(ctx);
  if (state == fx::ReinitState::fresh) ++g_tally.fresh;
  if (state == fx::ReinitState::reinited) ++g_tally.reinited;
  if (state == fx::ReinitState::restarted) ++g_tally.restarted;
  misuse(opt);

  const jacobi::Grid g = jacobi::Grid::from(ctx);
  const auto iters = ctx.config().get<std::int64_t>("iterations", 60);
  const int p = ctx.size(), r = ctx.rank();
  const int planes = g.count(r, p), z0 = g.first(r, p);
  std::vector<double> u((static_cast<std::size_t>(planes) + 2) * g.plane(), 0.0), v = u;
  ctx.store().add("u", u);
  std::int64_t it = 0;
  if (state != fx::ReinitState::fresh) it = fx::restore_checkpoint(ctx).value_or(0);

  const int every = ctx.fx_config().checkpoint.memory.every;
  const bool sync = fx::reinit_mode() == fx::ReinitMode::sync;
  for (; it < iters; ++it) {
    fx::iteration_point(ctx, it);
    bool caught = false;
    try {
      exchange(ctx, g, planes, u);
    } catch (const fx::ProcessFailure&) {
      if (!sync) throw;
      caught = true;  // sync: keep going; the rollback waits for test_failure
    }
    jacobi::sweep(g, z0, planes, u, v);
    std::swap(u, v);
    if (caught) ++g_tally.deferred;
    if (sync) fx::test_failure(ctx);
    if (every > 0 && (it + 1) % every == 0) fx::checkpoint(ctx, it + 1);
  }

  const std::uint64_t got = jacobi::digest(ctx, g, u);
  const auto tallies = ctx.comm().gather(g_tally, 0);
  if (opt.misuse == "finalize") Kokkos::finalize();  // fx's job, after return: rejected
  if (r != 0) return;
  const std::uint64_t want = jacobi::replay(g, iters);
  int replacements = 0, deferred = 0;
  for (std::size_t q = 0; q < tallies.size(); ++q) {
    const Tally& t = tallies[q];
    deferred += t.deferred;
    const bool replacement = t.restarted > 0;
    replacements += replacement ? 1 : 0;
    const bool ok =
        replacement ? t.restarted == 1 && t.fresh == 0 : t.fresh == 1 && t.reinited == ctx.recoveries();
    if (!ok) {
      fail(fmt::format("rank {} entered new {}, reinited {}, restarted {} times with {} recoveries", q,
                       t.fresh, t.reinited, t.restarted, ctx.recoveries()));
    }
  }
  std::printf(
      "reinit_app: mode %s, %d recoveries, %d replacement(s), %d deferred rollback(s), digest %016llx, "
      "expected %016llx\n",
      std::string(fx::to_string(fx::reinit_mode())).c_str(), ctx.recoveries(), replacements, deferred,
      static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
  ctx.report().set_result("digest", fmt::format("{:016x}", got));
  if (got != want) fail("the answer differs from the failure-free replay");
  if (opt.expect_recoveries >= 0 && ctx.recoveries() != opt.expect_recoveries)
    fail(fmt::format("{} recoveries, expected {}", ctx.recoveries(), opt.expect_recoveries));
  if (opt.expect_recoveries >= 0 && replacements != opt.expect_recoveries)
    fail(fmt::format("{} replacement processes, expected {}", replacements, opt.expect_recoveries));
  if (opt.expect_deferred && deferred == 0) fail("sync mode: no rank carried a caught error to test_failure");
  if (!opt.expect_level.empty()) {
    const auto& recs = ctx.report().recoveries();
    const std::string level =
        recs.empty() ? "(no recovery)" : std::string(fx::to_string(recs.back().restored_level));
    if (level != opt.expect_level)
      fail("the last restore came from " + level + ", expected " + opt.expect_level);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], "--preset-sync") == 0) fx::set_reinit_mode(fx::ReinitMode::sync);
  return fx::reinit(argc, argv, solve);
}
