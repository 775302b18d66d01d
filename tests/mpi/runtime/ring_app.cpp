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
//   --legacy unchecked|checked (the ring's exchange and sum as raw MPI calls
//   on ctx.comm().raw(), their return codes ignored, or passed to
//   fx::check_mpi: code fx did not write)
//   --commit-multiple K (can_checkpoint: commits only at multiples of K)
//   --explicit-commit K (the app commits itself after every K-th step)
//   Every rank counts the steps it completed while !ctx.replaying() and
//   !ctx.failing(): a rank that was not recruited must have counted each
//   from its first step on exactly once.
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <time.h>
#include <unistd.h>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <map>
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
  int throw_rank = -1;  // this logical rank throws an fx::Error at iteration 5
  int exit_rank = -1;   // this logical rank calls std::exit(exit_status) at iteration 5
  int exit_status = 7;
  bool exit_raw = false;   // --exit-raw: _exit (no exit handler runs) instead of std::exit
  int abort_rank = -1;     // this logical rank calls MPI_Abort(world, 9) at iteration 5
  std::string block_path;  // finish() puts a plain file here (a report directory that cannot be made)
  std::string legacy;      // "", "unchecked" or "checked"
  int commit_multiple = 0;
  int explicit_commit = 0;
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
    cli.add_option("--exit-on-rank", opt_.exit_rank);
    cli.add_option("--exit-status", opt_.exit_status);
    cli.add_flag("--exit-raw", opt_.exit_raw);
    cli.add_option("--abort-on-rank", opt_.abort_rank);
    cli.add_option("--block-path", opt_.block_path);
    cli.add_option("--legacy", opt_.legacy)->check(CLI::IsMember({"unchecked", "checked"}));
    cli.add_option("--commit-multiple", opt_.commit_multiple);
    cli.add_option("--explicit-commit", opt_.explicit_commit);
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
    if (it == 5 && ctx.rank() == opt_.exit_rank) {
      if (opt_.exit_raw) _exit(opt_.exit_status);
      std::exit(opt_.exit_status);
    }
    if (it == 5 && ctx.rank() == opt_.abort_rank) MPI_Abort(MPI_COMM_WORLD, 9);
    const auto& comm = ctx.comm();
    const int r = ctx.rank(), p = ctx.size();
    std::uint64_t left = 0;
    if (opt_.legacy.empty()) {
      comm.sendrecv(&data_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 7);
    } else {
      legacy(ctx, MPI_Sendrecv(&data_[0], 1, MPI_UINT64_T, (r + 1) % p, 7, &left, 1, MPI_UINT64_T,
                               (r + p - 1) % p, 7, comm.raw(), MPI_STATUS_IGNORE));
    }
    ctx.fault_point(fx::Phase::halo);
    const std::uint64_t local = fx_test::ring_advance(data_, r, it, left);
    std::uint64_t sum = 0;
    if (opt_.legacy.empty())
      sum = comm.allreduce(local, MPI_SUM);
    else
      legacy(ctx, MPI_Allreduce(&local, &sum, 1, MPI_UINT64_T, MPI_SUM, comm.raw()));
    acc_ = acc_ * 31 + sum;
    if (opt_.derived) acc_ += half_.allreduce(local, MPI_SUM) & 0xff;
    if (opt_.step_ms > 0) {
      timespec ts{0, static_cast<long>(opt_.step_ms * 1e6)};
      nanosleep(&ts, nullptr);
    }
    if (!ctx.replaying() && !ctx.failing()) ++printed_[it];  // a step's output, printed once
    const auto committed = ctx.store().committed_iteration();
    if (opt_.commit_multiple > 0 && committed && *committed % opt_.commit_multiple != 0)
      problems_ +=
          fmt::format(" committed iteration {} is no multiple of {};", *committed, opt_.commit_multiple);
    if (opt_.explicit_commit > 0 && (it + 1) % opt_.explicit_commit == 0) ctx.store().commit(it + 1);
    return it + 1 >= opt_.iters;
  }

  bool can_checkpoint(fx::Context&, std::int64_t iteration) override {
    return opt_.commit_multiple <= 0 || iteration % opt_.commit_multiple == 0;
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
    if ((opt_.commit_multiple > 0 || opt_.explicit_commit > 0) && !ctx.store().committed_iteration())
      problems_ += " no version was committed;";
    if (recoveries_at_setup_ == 0) {  // from its first step (a relaunch starts at a checkpoint)
      for (std::int64_t it = printed_.empty() ? 0 : printed_.begin()->first; it < opt_.iters; ++it)
        if (printed_[it] != 1) problems_ += fmt::format(" step {} printed {} times;", it, printed_[it]);
    }
    fx_test::agree_verdict(ctx, problems_);
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

  // A raw MPI call's return code, as code fx did not write handles it.
  void legacy(const fx::Context& ctx, int rc) const {
    if (opt_.legacy == "checked") fx::check_mpi(ctx.comm().raw(), rc, "ring_app's raw MPI call");
  }

  Options opt_;
  std::map<std::int64_t, int> printed_;  // never registered: what this process printed
  std::string problems_;
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
