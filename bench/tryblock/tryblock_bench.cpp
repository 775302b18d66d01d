// TryBlock cost against one MPIX_Comm_agree on the same communicator, in one
// run: rounds of K agreements and K error-free TryBlocks (empty body, nothing
// registered to save), alternating which goes first, then K bare
// MPIX_Comm_iagree + MPI_Test loops for reference. A round's time is the
// slowest rank's; rank 0 prints the medians over the rounds as one line:
//   tryblock_bench: {np: 4, agree_us: .., tryblock_us: .., ratio: .., ...}
// Flags: --rounds R (default 21) --per-round K (default 200)
#include <fx/clock.hpp>
#include <fx/fx.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx_bench/results.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <vector>

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

class Bench : public fx::ResilientApp {
 public:
  bool step(fx::Context& ctx, std::int64_t) override {
    int rounds = 21, per_round = 200;
    CLI::App cli("tryblock_bench");
    cli.add_option("--rounds", rounds);
    cli.add_option("--per-round", per_round);
    std::vector<std::string> args(ctx.args().rbegin(), ctx.args().rend() - 1);
    cli.parse(args);

    const auto& comm = ctx.comm();
    const auto agree = [&] {
      int flag = 1;
      FX_CHECK_MPI(comm, fx::ulfm::agree(comm.raw(), &flag));
    };
    const auto block = [&] { ctx.try_block("bench", [](fx::TryScope&) {}); };
    // What a TryBlock's commit waits on: MPIX_Comm_iagree polled with MPI_Test.
    const auto iagree = [&] {
      int flag = 1, done = 0;
      MPI_Request q = MPI_REQUEST_NULL;
      FX_CHECK_MPI(comm, fx::ulfm::iagree(comm.raw(), &flag, &q));
      while (!done) FX_CHECK_MPI(comm, MPI_Test(&q, &done, MPI_STATUS_IGNORE));
    };

    // Seconds per operation for the slowest rank.
    const auto time = [&](const auto& op) {
      comm.barrier();
      const double t0 = fx::now();
      for (int i = 0; i < per_round; ++i) op();
      return comm.allreduce((fx::now() - t0) / per_round, MPI_MAX);
    };
    time(agree);  // warm up both paths
    time(block);
    std::vector<double> a, b, c;
    for (int r = 0; r < rounds; ++r) {
      if (r % 2 == 0) {
        a.push_back(time(agree));
        b.push_back(time(block));
      } else {
        b.push_back(time(block));
        a.push_back(time(agree));
      }
      c.push_back(time(iagree));
    }
    if (ctx.rank() == 0) {
      std::vector<double> ratios;
      for (std::size_t i = 0; i < a.size(); ++i) ratios.push_back(b[i] / a[i]);
      fx_bench::Line("tryblock_bench")
          .add("np", ctx.size())
          .add("agree_us", median(a) * 1e6)
          .add("tryblock_us", median(b) * 1e6)
          .add("iagree_test_us", median(c) * 1e6)
          .add("ratio", median(b) / median(a))
          .add("round_ratio_median", median(ratios))
          .add("rounds", rounds)
          .add("per_round", per_round)
          .print();
    }
    return true;
  }
};

}  // namespace

int main(int argc, char** argv) { return fx::run<Bench>(argc, argv); }
