// Failure-free cost of fx and of idle spares. The same step (about
// --work-ms of arithmetic on a private array, then an allreduce) runs either
// as a plain MPI loop (--plain) or as an fx::ResilientApp; logical rank 0
// prints one YAML line with the time per step. bench/recovery/overhead_bench.py
// launches the variants alternately and compares medians.
#include <fx/clock.hpp>
#include <fx/exit_code.hpp>
#include <fx/fx.hpp>
#include <fx_bench/results.hpp>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct Kernel {
  std::vector<double> a = std::vector<double>(1 << 15, 1.0);
  long reps = 0;

  double run() {
    double s = 0;
    for (long r = 0; r < reps; ++r)
      for (auto& x : a) {
        x = x * 0.999999 + 1e-6;
        s += x;
      }
    return s;
  }
  // Calibrate reps so one step takes about ms milliseconds on this rank.
  void calibrate(double ms) {
    reps = 1;
    const double t0 = fx::now();
    run();
    const double one = fx::now() - t0;
    reps = std::max(1L, static_cast<long>(ms * 1e-3 / std::max(one, 1e-7)));
  }
};

long steps_arg(int argc, char** argv, const char* name, long fallback) {
  for (int i = 1; i + 1 < argc; ++i)
    if (!std::strcmp(argv[i], name)) return std::atol(argv[i + 1]);
  return fallback;
}

void print(const char* mode, int ranks, long steps, double seconds, long reps) {
  fx_bench::Line("loop")
      .add("mode", mode)
      .add("ranks", ranks)
      .add("steps", steps)
      .add("seconds", seconds)
      .add("ms_per_step", seconds * 1e3 / static_cast<double>(steps))
      .add("reps", reps)
      .print();
}

int plain(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const long steps = steps_arg(argc, argv, "--steps", 100);
  Kernel k;
  k.reps = steps_arg(argc, argv, "--reps", 0);
  if (k.reps == 0) k.calibrate(static_cast<double>(steps_arg(argc, argv, "--work-ms", 10)));
  // Every rank uses rank 0's calibration, as the fx variant does.
  MPI_Bcast(&k.reps, 1, MPI_LONG, 0, MPI_COMM_WORLD);
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = fx::now();
  for (long s = 0; s < steps; ++s) {
    double v = k.run();
    MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  const double dt = fx::now() - t0;
  if (rank == 0) {
    print("plain", size, steps, dt, k.reps);
    fx::write_status(fx::ExitCode::ok, "plain loop");
  }
  MPI_Finalize();
  return 0;
}

class LoopApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    int argc = static_cast<int>(ctx.args().size());
    std::vector<char*> argv;
    for (const auto& a : ctx.args()) argv.push_back(const_cast<char*>(a.c_str()));
    steps_ = steps_arg(argc, argv.data(), "--steps", 100);
    kernel_.reps = steps_arg(argc, argv.data(), "--reps", 0);
    if (kernel_.reps == 0)
      kernel_.calibrate(static_cast<double>(steps_arg(argc, argv.data(), "--work-ms", 10)));
    ctx.comm().bcast(&kernel_.reps, 1, 0);
    ctx.comm().barrier();
    t0_ = fx::now();
  }
  bool step(fx::Context& ctx, std::int64_t it) override {
    double v = kernel_.run();
    ctx.comm().allreduce(&v, &v, 1, MPI_SUM);
    return it + 1 >= steps_;
  }
  void finish(fx::Context& ctx) override {
    const double dt = fx::now() - t0_;
    if (ctx.rank() == 0) print("fx", ctx.size(), steps_, dt, kernel_.reps);
  }

 private:
  Kernel kernel_;
  long steps_ = 0;
  double t0_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  const auto has = [&](const char* flag) {
    return std::any_of(argv + 1, argv + argc, [&](const char* a) { return !std::strcmp(a, flag); });
  };
  // The launcher's --fx-print-launch question goes to fx, plain or not: it
  // must not run the loop.
  if (has("--plain") && !has("--fx-print-launch")) return plain(argc, argv);
  return fx::run<LoopApp>(argc, argv);
}
