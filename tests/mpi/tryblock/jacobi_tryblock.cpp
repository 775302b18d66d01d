// The Jacobi solver of tests/mpi/reinit/jacobi.hpp with every sweep in a
// TryBlock and an algorithm-based check: the checksum of u is carried with
// it ("u_sum", registered), so a bit flip in u between two sweeps fails the
// next block's check. Run by configs/tryblock.yaml (app: nx ny nz
// iterations residual_every). The answer must equal the serial replay.
//
// Flags after fx's: --expect-recoveries K  --expect-log ACTION,ACTION,...
// (the actions of the logged TryBlock outcomes, e.g. rollback,recovery).
#include <fx/fx.hpp>

#include <fx_test/app_support.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "jacobi.hpp"
#include "same_log.hpp"

namespace {

class JacobiTry : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("jacobi_tryblock");
    cli.add_option("--expect-recoveries", expect_recoveries_);
    cli.add_option("--expect-log", expect_log_);
    fx_test::parse_app_args(cli, ctx);
    g_ = jacobi::Grid::from(ctx);
    iters_ = ctx.config().get<std::int64_t>("iterations", 40);
    residual_every_ = ctx.config().get<std::int64_t>("residual_every", 10);
    planes_ = g_.count(ctx.rank(), ctx.size());
    z0_ = g_.first(ctx.rank(), ctx.size());
    u_.assign((static_cast<std::size_t>(planes_) + 2) * g_.plane(), 0.0);
    v_ = u_;
    ctx.store().add("u", u_);
    ctx.store().add_scalar("u_sum", u_sum_);
  }

  void initialize(fx::Context&) override {
    std::fill(u_.begin(), u_.end(), 0.0);
    u_sum_ = jacobi::checksum(g_, planes_, u_);
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    const int r = ctx.rank(), p = ctx.size();
    const std::size_t pl = g_.plane();
    ctx.try_block("sweep", [&](fx::TryScope& t) {
      // u changed outside a committed sweep. The exchange still happens, so
      // the neighbours need not wait for the deadline.
      if (jacobi::checksum(g_, planes_, u_) != u_sum_) t.raise_error(fx::TryError::incorrect_result);
      if (r > 0) {
        t.irecv(u_.data(), pl, r - 1, 1);
        t.isend(u_.data() + pl, pl, r - 1, 0);
      }
      if (r + 1 < p) {
        t.irecv(u_.data() + (static_cast<std::size_t>(planes_) + 1) * pl, pl, r + 1, 0);
        t.isend(u_.data() + static_cast<std::size_t>(planes_) * pl, pl, r + 1, 1);
      }
      if (!t.wait()) return;
      jacobi::sweep(g_, z0_, planes_, u_, v_);
      std::swap(u_, v_);
      u_sum_ = jacobi::checksum(g_, planes_, u_);
    });
    if (residual_every_ > 0 && ((it + 1) % residual_every_ == 0 || it + 1 == iters_)) {
      double change = 0;  // the last sweep's update, a residual proxy
      for (std::size_t i = pl; i < (static_cast<std::size_t>(planes_) + 1) * pl; ++i)
        change += (u_[i] - v_[i]) * (u_[i] - v_[i]);
      change_ = std::sqrt(ctx.comm().allreduce(change, MPI_SUM));
    }
    return it + 1 >= iters_;
  }

  void finish(fx::Context& ctx) override {
    std::string actions;
    for (const auto& o : fx::try_log(ctx))
      actions += (actions.empty() ? "" : ",") + std::string(fx::to_string(o.action));
    const bool original = ctx.role() != fx::Role::recovered;
    if (original && !expect_log_.empty() && actions != expect_log_)
      FX_THROW(fx::Error,
               "jacobi_tryblock: logged TryBlock actions '" + actions + "', expected '" + expect_log_ + "'");
    const std::string text = tryblock_test::check_same_log(ctx);
    const std::uint64_t got = jacobi::digest(ctx, g_, u_);
    if (ctx.rank() != 0) return;
    const std::uint64_t want = jacobi::replay(g_, iters_);
    std::printf("jacobi_tryblock: %d recoveries, last update %.6e, digest %016llx, expected %016llx\n%s",
                ctx.recoveries(), change_, static_cast<unsigned long long>(got),
                static_cast<unsigned long long>(want), text.c_str());
    ctx.report().set_result("digest", fmt::format("{:016x}", got));
    if (got != want) FX_THROW(fx::Error, "jacobi_tryblock: the answer differs from the failure-free replay");
    if (expect_recoveries_ >= 0 && ctx.recoveries() != expect_recoveries_)
      FX_THROW(fx::Error, fmt::format("jacobi_tryblock: {} recoveries, expected {}", ctx.recoveries(),
                                      expect_recoveries_));
  }

 private:
  jacobi::Grid g_;
  std::int64_t iters_ = 40, residual_every_ = 10;
  int planes_ = 0, z0_ = 0;
  std::vector<double> u_, v_;
  std::uint64_t u_sum_ = 0;
  double change_ = 0;
  int expect_recoveries_ = -1;
  std::string expect_log_;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<JacobiTry>(argc, argv); }
