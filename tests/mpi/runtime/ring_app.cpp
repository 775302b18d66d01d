// A small self-checking resilient app for the runtime tests.
//
// Each logical rank evolves a block of 64-bit integers with an LCG keyed to
// (rank, iteration), passes a word around a ring and folds a global sum into
// an accumulator. Integer arithmetic makes every reduction exact, so rank 0
// can replay the whole failure-free run serially and compare.
//
// Flags (after fx's own): --iters N --n WORDS --step-ms MS
//   --expect-recoveries K --expect-size S --expect-role ROLE@RANK
//   --derived (also reduce over a communicator split from the app comm)
//   --throw-on-rank R (rank R throws at iteration 5: the job must end, exit 1)
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace {

struct Options {
  std::int64_t iters = 40;
  std::size_t n = 1024;
  double step_ms = 2;
  int expect_recoveries = -1;
  int expect_size = -1;
  bool derived = false;
  int throw_rank = -1;     // this logical rank throws an fx::Error at iteration 5
  std::string block_path;  // finish() puts a plain file here (a report directory that cannot be made)
};

class RingApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("ring_app");
    cli.add_option("--iters", opt_.iters);
    cli.add_option("--n", opt_.n);
    cli.add_option("--step-ms", opt_.step_ms);
    cli.add_option("--expect-recoveries", opt_.expect_recoveries);
    cli.add_option("--expect-size", opt_.expect_size);
    cli.add_flag("--derived", opt_.derived);
    cli.add_option("--throw-on-rank", opt_.throw_rank);
    cli.add_option("--block-path", opt_.block_path);
    fx_test::parse_app_args(cli, ctx);
    data_.assign(opt_.n, 0);
    ctx.store().add("data", data_);
    ctx.store().add_scalar("acc", acc_);
    if (opt_.derived) half_ = ctx.split(ctx.rank() % 2, ctx.rank());
    // A recruited spare registers after the repair that recruited it.
    recoveries_at_setup_ = ctx.recoveries();
    callbacks_ = 0;
    ctx.on_failure([this](const fx::FailureEvent&) { ++callbacks_; });
  }

  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = fx_test::ring_seed(ctx.rank(), i);
    acc_ = 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (it == 5 && ctx.rank() == opt_.throw_rank)
      FX_THROW(fx::Error, "ring_app: --throw-on-rank asked for an error");
    const auto& comm = ctx.comm();
    const int r = ctx.rank(), p = ctx.size();
    std::uint64_t left = 0;
    comm.sendrecv(&data_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 7);
    ctx.fault_point(fx::Phase::halo);
    const std::uint64_t local = fx_test::ring_advance(data_, r, it, left);
    acc_ = acc_ * 31 + comm.allreduce(local, MPI_SUM);
    if (opt_.derived) acc_ += half_.allreduce(local, MPI_SUM) & 0xff;
    if (opt_.step_ms > 0) {
      timespec ts{0, static_cast<long>(opt_.step_ms * 1e6)};
      nanosleep(&ts, nullptr);
    }
    return it + 1 >= opt_.iters;
  }

  void finish(fx::Context& ctx) override {
    if (opt_.expect_size >= 0 && ctx.size() != opt_.expect_size) {
      FX_THROW(fx::Error, fmt::format("size {} != expected {}", ctx.size(), opt_.expect_size));
    }
    if (opt_.expect_recoveries >= 0 && ctx.recoveries() != opt_.expect_recoveries) {
      FX_THROW(fx::Error,
               fmt::format("recoveries {} != expected {}", ctx.recoveries(), opt_.expect_recoveries));
    }
    if (callbacks_ != ctx.recoveries() - recoveries_at_setup_) {
      FX_THROW(fx::Error, fmt::format("{} failure callbacks ran for {} recoveries since setup", callbacks_,
                                      ctx.recoveries() - recoveries_at_setup_));
    }
    const auto roles = ctx.comm().gather(static_cast<int>(ctx.role()), 0);
    if (ctx.rank() != 0) return;
    if (!opt_.block_path.empty()) std::ofstream(opt_.block_path) << "in the report's way\n";
    const std::uint64_t want = replay(ctx.size());
    std::string role_list;
    for (int role : roles) role_list += std::string(fx::to_string(static_cast<fx::Role>(role))) + " ";
    std::printf("ring_app: size %d, recoveries %d, roles [ %s], acc %llu, expected %llu\n", ctx.size(),
                ctx.recoveries(), role_list.c_str(), static_cast<unsigned long long>(acc_),
                static_cast<unsigned long long>(want));
    ctx.report().set_result("acc", std::to_string(acc_));
    if (acc_ != want) FX_THROW(fx::Error, fmt::format("acc {} != failure-free {}", acc_, want));
  }

 private:
  // The failure-free run on p ranks, serially.
  std::uint64_t replay(int p) const {
    fx_test::RingReplayOptions options;
    options.fold = [this](std::uint64_t acc, const std::vector<std::uint64_t>& locals) {
      acc = fx_test::ring_fold(acc, locals);
      if (!opt_.derived) return acc;
      // Each rank adds its own half's sum; acc is rank 0's, i.e. the even half.
      std::uint64_t even = 0;
      for (std::size_t r = 0; r < locals.size(); r += 2) even += locals[r];
      return acc + (even & 0xff);
    };
    return fx_test::ring_replay(p, opt_.n, opt_.iters, options).acc;
  }

  Options opt_;
  std::vector<std::uint64_t> data_;
  std::uint64_t acc_ = 0;
  fx::Comm half_;
  int callbacks_ = 0;
  int recoveries_at_setup_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  // RING_DIE_BEFORE_INIT=R: world rank R is lost during MPI start-up (before
  // MPI_Init), where nothing can be recovered: the launcher must end the job.
  const char* die = std::getenv("RING_DIE_BEFORE_INIT");
  const char* rank = std::getenv("PMIX_RANK");
  if (die && rank && std::string(die) == rank) std::raise(SIGKILL);
  // RING_SIGNAL_MPIEXEC_BEFORE_INIT=R:SIG: world rank R sends signal SIG to
  // mpiexec (its parent) before MPI_Init and waits: mpiexec ends during
  // start-up (prterun once died on its own assertion), nobody writes a
  // verdict, and the launcher must still give one.
  const char* signal_env = std::getenv("RING_SIGNAL_MPIEXEC_BEFORE_INIT");
  const std::string signal_launcher = signal_env ? signal_env : "";
  const auto colon = signal_launcher.find(':');
  if (rank && colon != std::string::npos && signal_launcher.substr(0, colon) == rank) {
    ::kill(::getppid(), std::atoi(signal_launcher.c_str() + colon + 1));
    ::sleep(5);  // mpiexec has long ended (ranks are no part of its process group)
    return 1;
  }
  return fx::run<RingApp>(argc, argv);
}
