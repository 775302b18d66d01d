// A resilient app for the data store's real-kill tests. Each logical rank
// evolves a block of 64-bit words (an LCG keyed to rank and iteration, fed
// by its left neighbour), derives a LayoutLeft View of doubles from it, and
// folds a global sum into an accumulator. finish() replays the failure-free
// run serially and compares every rank's state bit for bit.
//
// Kills come from fx's injector (FX_INJECT): e.g. `2@12/compute` (the
// start of step 12), `2@15/commit-save` (inside the checkpoint of 15),
// `0@restore-load` (inside the restore after the first repair); every rank
// at one point kills the whole job, and rank 0 first leaves the verdict
// "aborted" (4) for the launcher.
//
// Flags (after fx's own): --iters N --n WORDS --expect-level memory|hdf5|none
//   --expect-recoveries K --expect-first-step IT
//   --clean-dir (rank 0 empties the HDF5 directory first: repeatable runs)
//   --wildcard (the halo arrives through MPI_ANY_SOURCE / MPI_ANY_TAG
//   receives posted at the start of every step, also right after a restore
//   whose buddy copies are still in flight: the store's traffic, on its own
//   communicator, must never match them; source, tag and size are checked)
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace {

template <class View>
void derive(const std::vector<std::uint64_t>& w, const View& aux, std::int64_t it) {
  for (std::size_t i = 0; i < aux.extent(0); ++i) {
    for (std::size_t j = 0; j < aux.extent(1); ++j) {
      aux(i, j) = static_cast<double>(w[i * aux.extent(1) + j] >> 11) * 0x1p-53 + static_cast<double>(it);
    }
  }
}

class StoreApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("data_store_ft_app");
    cli.add_option("--iters", iters_);
    cli.add_option("--n", n_);
    cli.add_option("--expect-level", expect_level_);
    cli.add_option("--expect-recoveries", expect_recoveries_);
    cli.add_option("--expect-first-step", expect_first_step_);
    bool clean = false;
    cli.add_flag("--clean-dir", clean);
    cli.add_flag("--wildcard", wildcard_);
    fx_test::parse_app_args(cli, ctx);
    // Before any checkpoint exists: other ranks touch the directory only
    // after collective steps (or through rank 0's listing at a cold start).
    if (clean) fx_test::clean_checkpoint_dir(ctx);

    words_.assign(n_, 0);
    aux_ = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>("aux", n_ / 8, 8);
    ctx.store().add("words", words_);
    ctx.store().add("aux", aux_);
    ctx.store().add_scalar("acc", acc_);
  }

  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < n_; ++i) words_[i] = fx_test::ring_seed(ctx.rank(), i);
    acc_ = 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (first_step_ < 0) first_step_ = it;
    const auto& comm = ctx.comm();
    const int r = ctx.rank(), p = ctx.size();
    std::uint64_t left = 0;
    if (wildcard_)
      left = wildcard_halo(ctx, it);
    else
      comm.sendrecv(&words_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 7);
    const std::uint64_t local = fx_test::ring_advance(words_, r, it, left);
    derive(words_, aux_, it);
    acc_ = acc_ * 31 + comm.allreduce(local, MPI_SUM);
    return it + 1 >= iters_;
  }

  void finish(fx::Context& ctx) override {
    const int r = ctx.rank(), p = ctx.size();
    const auto want = fx_test::ring_replay(p, n_, iters_);
    const auto& w = want.words[static_cast<std::size_t>(r)];
    const std::uint64_t acc = want.acc;
    Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> aux("want", n_ / 8, 8);
    derive(w, aux, iters_ - 1);

    std::string problems;
    if (std::memcmp(words_.data(), w.data(), n_ * sizeof(std::uint64_t)) != 0) {
      problems += " words differ;";
    }
    if (std::memcmp(aux_.data(), aux.data(), aux.size() * sizeof(double)) != 0) problems += " aux differs;";
    if (acc_ != acc) problems += fmt::format(" acc {} != {};", acc_, acc);
    problems += halo_problems_;
    const std::string level(fx::to_string(ctx.store().last_restore_level()));
    if (!expect_level_.empty() && ctx.recoveries() > 0 && level != expect_level_) {
      problems += fmt::format(" last restore from {} (expected {});", level, expect_level_);
    }
    if (expect_recoveries_ >= 0 && ctx.recoveries() != expect_recoveries_) {
      problems += fmt::format(" {} recoveries (expected {});", ctx.recoveries(), expect_recoveries_);
    }
    if (expect_first_step_ >= 0 && ctx.role() == fx::Role::initial && first_step_ != expect_first_step_) {
      problems += fmt::format(" first step {} (expected {});", first_step_, expect_first_step_);
    }
    fx_test::agree_verdict(ctx, problems);
    if (r == 0) {
      std::printf(
          "data_store_ft_app: %d ranks, %d recoveries, last restore %s, first step %lld: state matches the "
          "failure-free run bit for bit\n",
          p, ctx.recoveries(), level.c_str(), static_cast<long long>(first_step_));
    }
  }

 private:
  std::int64_t iters_ = 30;
  std::size_t n_ = 4096;
  std::string expect_level_;
  int expect_recoveries_ = -1;
  std::int64_t expect_first_step_ = -1;
  std::vector<std::uint64_t> words_;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> aux_;
  std::uint64_t acc_ = 0;
  std::int64_t first_step_ = -1;
  bool wildcard_ = false;
  std::string halo_problems_;

  MPI_Request halo_req_ = MPI_REQUEST_NULL;
  int halo_epoch_ = 0;  // recoveries when halo_req_ was posted
  std::uint64_t halo_in_[2] = {0, 0};

  // The left neighbour's first word through a wildcard receive, posted
  // ahead: the next step's is pending across the checkpoint in between.
  std::uint64_t wildcard_halo(const fx::Context& ctx, std::int64_t it) {
    const auto& comm = ctx.comm();
    const int r = comm.rank(), p = comm.size();
    if (halo_req_ != MPI_REQUEST_NULL && halo_epoch_ != ctx.recoveries()) {
      // Posted before a repair, on the revoked communicator: it ends in error.
      MPI_Wait(&halo_req_, MPI_STATUS_IGNORE);
      halo_req_ = MPI_REQUEST_NULL;
    }
    if (halo_req_ == MPI_REQUEST_NULL) post_halo(ctx);
    FX_CHECK_MPI(comm, MPI_Send(&words_[0], 1, MPI_UINT64_T, (r + 1) % p, 7, comm.raw()));
    MPI_Status st{};
    FX_CHECK_MPI(comm, MPI_Wait(&halo_req_, &st));
    int count = -1;
    MPI_Get_count(&st, MPI_UINT64_T, &count);
    if (st.MPI_SOURCE != (r + p - 1) % p || st.MPI_TAG != 7 || count != 1) {
      halo_problems_ +=
          fmt::format(" step {}: the wildcard halo receive matched source {}, tag {}, {} words;", it,
                      st.MPI_SOURCE, st.MPI_TAG, count);
    }
    const std::uint64_t left = halo_in_[0];
    if (it + 1 < iters_) post_halo(ctx);
    return left;
  }
  void post_halo(const fx::Context& ctx) {
    const auto& comm = ctx.comm();
    FX_CHECK_MPI(comm,
                 MPI_Irecv(halo_in_, 2, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, comm.raw(), &halo_req_));
    halo_epoch_ = ctx.recoveries();
  }
};

}  // namespace

int main(int argc, char** argv) { return fx::run<StoreApp>(argc, argv); }
