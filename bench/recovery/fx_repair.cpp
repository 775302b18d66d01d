// fx's side of the recovery benchmark: the same loop as raw_repair (an
// allreduce per 1 ms step) as a ResilientApp, with the kill injected by fx
// (inject: in the YAML / FX_INJECT). Rank 0 prints the recovery breakdown
// of the run report as one YAML line, plus kill -> the first allreduce
// completed after the repair, measured exactly as raw_repair does.
#include <fx/clock.hpp>
#include <fx/fx.hpp>
#include <fx/inject.hpp>  // kill_stamp_path (internal)
#include <fx_bench/results.hpp>

#include <time.h>

#include <algorithm>
#include <fstream>

namespace {

class LoopApp : public fx::ResilientApp {
 public:
  bool step(fx::Context& ctx, std::int64_t it) override {
    int v = 1;
    ctx.comm().allreduce(&v, &v, 1, MPI_SUM);
    if (ctx.recoveries() > seen_) {
      const double t = fx::now();
      seen_ = ctx.recoveries();
      for (int w = 0; w < 64; ++w) {  // the newest kill stamp among the world ranks
        std::ifstream in(fx::detail::kill_stamp_path(w));
        double tk = 0;
        if (in >> tk) t_kill_ = std::max(t_kill_, tk);
      }
      if (t_kill_ > 0) resume_ms_ = (t - t_kill_) * 1e3;
    }
    const timespec ts{0, 1000000};
    nanosleep(&ts, nullptr);
    return it + 1 >= 100;
  }
  void finish(fx::Context& ctx) override {
    if (ctx.rank() != 0) return;
    for (const auto& r : ctx.report().recoveries()) {
      fx_bench::Line("fx_repair")
          .add("kill_to_resume_ms", resume_ms_)
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
  double t_kill_ = 0;
  double resume_ms_ = -1;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<LoopApp>(argc, argv); }
