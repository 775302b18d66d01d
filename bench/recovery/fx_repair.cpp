// fx's side of the recovery and scaling benchmarks: the same loop as
// raw_repair (an allreduce per 1 ms step, 100 steps in all) as a
// ResilientApp, with the kills injected by fx (inject: in the YAML /
// FX_INJECT; several victims at once as several specs). Every active rank
// stamps the first allreduce completed after the repair against the newest
// kill stamp; logical rank 0 prints the maximum over them with the recovery
// breakdown of the run report as one YAML line, exactly as raw_repair does.
// Nothing is checkpointed, so the restore call is fx's data-less one.
#include <fx/clock.hpp>
#include <fx/fx.hpp>
#include <fx/inject.hpp>  // read_kill_stamp (internal)
#include <fx_bench/results.hpp>

#include <time.h>

#include <algorithm>

namespace {

constexpr int kSteps = 100;

double newest_kill_stamp() {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  double t = 0;
  for (int w = 0; w < world; ++w) t = std::max(t, fx::detail::read_kill_stamp(w).time);
  return t;
}

class LoopApp : public fx::ResilientApp {
 public:
  bool step(fx::Context& ctx, std::int64_t) override {
    const bool repaired = ctx.recoveries() > seen_;
    // Nothing is restored: a recruited spare learns the step count here,
    // as raw_repair's spare does in its repair.
    if (repaired) done_ = ctx.comm().allreduce(done_, MPI_MAX);
    int v = 1;
    ctx.comm().allreduce(&v, &v, 1, MPI_SUM);
    if (repaired) {
      // Compared with the kill stamp at the end: reading the stamps now would
      // take CPU from the ranks still in this allreduce.
      t_resume_ = fx::now();
      seen_ = ctx.recoveries();
    }
    const timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
    return ++done_ >= kSteps;
  }
  void finish(fx::Context& ctx) override {
    const double t_kill = t_resume_ > 0 ? newest_kill_stamp() : 0;
    const double resume_ms = t_kill > 0 ? (t_resume_ - t_kill) * 1e3 : -1;
    const double slowest = ctx.comm().allreduce(resume_ms, MPI_MAX);
    if (ctx.rank() != 0) return;
    for (const auto& r : ctx.report().recoveries()) {
      fx_bench::Line("fx_repair")
          .add("kill_to_resume_ms", slowest)
          .add("kill_to_first_step_ms", r.total_s * 1e3)
          .add("detect_ms", r.detect_s * 1e3)
          .add("revoke_ms", r.revoke_s * 1e3)
          .add("shrink_ms", r.shrink_s * 1e3)
          .add("agree_ms", r.agree_s * 1e3)
          .add("rebuild_ms", r.rebuild_s * 1e3)
          .add("restore_ms", r.restore_s * 1e3)
          .add("rounds", r.rounds)
          .print();
    }
  }

 private:
  int seen_ = 0;
  int done_ = 0;         // steps completed by the job
  double t_resume_ = 0;  // the first step completed after the repair
};

}  // namespace

int main(int argc, char** argv) { return fx::run<LoopApp>(argc, argv); }
