// Reinit's global restart against the runtime's in-place resume: the same
// loop (an allreduce per 1 ms step, 100 steps, a memory checkpoint of
// 64 KiB per rank every checkpoint.memory.every steps) run either as a ResilientApp (--mode inplace)
// or as the resilient function of fx::reinit (--mode reinit). The kill comes
// from fx's injection (FX_INJECT, e.g. 1@50). Rank 0 prints one line:
//   reinit_bench: {mode: .., kill_to_resume_ms: .., restore_ms: .., resume_ms: ..}
// kill_to_resume: the victim's kill stamp -> the first allreduce completed
// after the failure; resume_ms is that minus the checkpoint restore.
#include <fx/clock.hpp>
#include <fx/fx.hpp>
#include <fx/inject.hpp>  // read_kill_stamp (internal)
#include <fx_bench/results.hpp>

#include <time.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::int64_t kSteps = 100;

// The newest kill stamp any victim left (fx's injector writes them).
double newest_kill() {
  double t = 0;
  for (int w = 0; w < 64; ++w) t = std::max(t, fx::detail::read_kill_stamp(w).time);
  return t;
}

struct Timing {
  double resumed_at = 0;  // first allreduce completed after a failure
  double restore_s = 0;
};

// One step of the loop; notes the first completion after a failure.
void step(fx::Context& ctx, bool first_after_failure, Timing& t) {
  int v = 1;
  ctx.comm().allreduce(&v, &v, 1, MPI_SUM);
  if (first_after_failure) t.resumed_at = fx::now();
  const timespec ts{0, 1000000};
  nanosleep(&ts, nullptr);
}

void print(const fx::Context& ctx, const char* mode, const Timing& t) {
  if (ctx.rank() != 0 || ctx.recoveries() == 0) return;
  const double kill = newest_kill();
  const double total = kill > 0 ? (t.resumed_at - kill) * 1e3 : -1;
  fx_bench::Line("reinit_bench")
      .add("mode", mode)
      .add("kill_to_resume_ms", total)
      .add("restore_ms", t.restore_s * 1e3)
      .add("resume_ms", total - t.restore_s * 1e3)
      .print();
}

class InPlace : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    data_.assign(8192, 1.0);
    ctx.store().add("data", data_);
  }
  bool step(fx::Context& ctx, std::int64_t it) override {
    ::step(ctx, ctx.recoveries() > seen_, t_);
    seen_ = ctx.recoveries();
    return it + 1 >= kSteps;
  }
  void finish(fx::Context& ctx) override {
    const auto& recs = ctx.report().recoveries();  // rank 0's, which prints
    if (!recs.empty()) t_.restore_s = recs.back().restore_s;
    print(ctx, "inplace", t_);
  }

 private:
  std::vector<double> data_;
  Timing t_;
  int seen_ = 0;
};

Timing g_t;

void resilient(fx::Context& ctx, fx::ReinitState state) {
  std::vector<double> data(8192, 1.0);
  ctx.store().add("data", data);
  std::int64_t it = 0;
  if (state != fx::ReinitState::fresh) {
    const double t0 = fx::now();
    it = fx::restore_checkpoint(ctx).value_or(0);
    g_t.restore_s = fx::now() - t0;
  }
  const int every = ctx.fx_config().checkpoint.memory.every;
  for (bool first = state != fx::ReinitState::fresh; it < kSteps; ++it, first = false) {
    fx::iteration_point(ctx, it);
    step(ctx, first, g_t);
    if (every > 0 && (it + 1) % every == 0) fx::checkpoint(ctx, it + 1);
  }
  print(ctx, "reinit", g_t);
}

}  // namespace

int main(int argc, char** argv) {
  const bool reinit = argc > 2 && std::strcmp(argv[1], "--mode") == 0 && std::strcmp(argv[2], "reinit") == 0;
  if (reinit) return fx::reinit(argc, argv, resilient);
  return fx::run<InPlace>(argc, argv);
}
