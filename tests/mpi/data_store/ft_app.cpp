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
//   --resizable (state whose size changes every step and differs per rank,
//   registered with fx::resizable, and state derived from it that is not
//   registered and that restored() rebuilds on every rank: see Drift)
//   --staged (`aux` registered as a staged member, during_next_step: the
//   path a device View takes on a GPU, forced on this host View; its copies
//   land in the store's pinned images and restores send from them)
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <cmath>
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

// --resizable: state as particles that migrate, its size different on every
// rank and at every step: `kept` (a std::vector) drops some entries and
// takes some of the step's words; `xyz` (a View<double*[3]>) follows it,
// carrying half its old values. `kept_sum` is derived and never registered:
// restored() rebuilds it on every rank (a survivor's would be a later
// iteration's, a recruited rank's zero).
struct Drift {
  std::vector<std::uint64_t> kept;
  Kokkos::View<double* [3], Kokkos::HostSpace> xyz { "xyz", 0 };
  std::uint64_t kept_sum = 0;

  void advance(const std::vector<std::uint64_t>& words, std::int64_t it) {
    const auto step = static_cast<std::uint64_t>(it);
    std::vector<std::uint64_t> next;
    for (const auto e : kept) {
      if (((e >> 7) ^ step) % 5 != 0)
        next.push_back(e);
      else
        kept_sum -= e;
    }
    for (const auto w : words) {
      if (w % 13 != step % 13) continue;
      next.push_back(w);
      kept_sum += w;
    }
    Kokkos::View<double* [3], Kokkos::HostSpace> x(xyz.label(), next.size());
    for (std::size_t i = 0; i < next.size(); ++i) {
      for (int c = 0; c < 3; ++c) {
        const double carried = i < xyz.extent(0) ? 0.5 * xyz(i, c) : 0.0;
        x(i, c) = static_cast<double>((next[i] >> (20 * c)) & 0xfffff) + carried;
      }
    }
    kept.swap(next);
    xyz = x;
  }
  std::uint64_t sum() const {
    std::uint64_t s = 0;
    for (const auto e : kept) s += e;
    return s;
  }
  std::string differences(const Drift& want) const {
    std::string out;
    if (kept != want.kept)
      out += fmt::format(" kept differs ({} entries, {} expected);", kept.size(), want.kept.size());
    const bool same_xyz = xyz.extent(0) == want.xyz.extent(0) &&
                          std::memcmp(xyz.data(), want.xyz.data(), xyz.size() * sizeof(double)) == 0;
    if (!same_xyz)
      out += fmt::format(" xyz differs ({} rows, {} expected);", xyz.extent(0), want.xyz.extent(0));
    if (kept_sum != want.kept_sum) out += fmt::format(" kept_sum {} != {};", kept_sum, want.kept_sum);
    return out;
  }
};

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
    cli.add_flag("--resizable", resizable_);
    cli.add_flag("--halo-in-parallel", halo_in_parallel_);
    bool staged = false;
    cli.add_flag("--staged", staged);
    fx_test::parse_app_args(cli, ctx);
    // Before any checkpoint exists: other ranks touch the directory only
    // after collective steps (or through rank 0's listing at a cold start).
    if (clean) fx_test::clean_checkpoint_dir(ctx);

    words_.assign(n_, 0);
    aux_ = Aux("aux", n_ / 8, 8);
    ctx.store().add("words", words_);
    if (staged) {
      ctx.store().add_member(fx::detail::staged_member("aux", aux_, [this]() -> const Aux& { return aux_; }));
      ctx.store().set_snapshot("aux", fx::Snapshot::during_next_step);
    } else {
      ctx.store().add("aux", aux_);
    }
    ctx.store().add_scalar("acc", acc_);
    stepped_ = false;
    if (!resizable_) return;
    ctx.store().add("kept", fx::resizable(drift_.kept));
    ctx.store().add("xyz", fx::resizable(drift_.xyz));
  }

  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < n_; ++i) words_[i] = fx_test::ring_seed(ctx.rank(), i);
    acc_ = 0;
    drift_ = Drift{};
  }

  // Collective (the allreduce hangs the test if a rank is not called).
  void restored(fx::Context& ctx, const fx::RestoreInfo& info) override {
    ++restored_calls_;
    if (ctx.comm().allreduce(1, MPI_SUM) != ctx.size())
      hook_problems_ += " restored() not called everywhere;";
    if (info.fresh_process == stepped_)
      hook_problems_ += fmt::format(" restored(): fresh_process {} after {}a step;", info.fresh_process,
                                    stepped_ ? "" : "no ");
    if (info.level != ctx.store().last_restore_level())
      hook_problems_ += fmt::format(" restored(): level {};", fx::to_string(info.level));
    drift_.kept_sum = drift_.sum();
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    stepped_ = true;
    if (halo_in_parallel_) busy_region(ctx, it);
    if (first_step_ < 0) first_step_ = it;
    const auto& comm = ctx.comm();
    const int r = ctx.rank(), p = ctx.size();
    std::uint64_t left = 0;
    if (wildcard_)
      left = wildcard_halo(ctx, it);
    else
      comm.sendrecv(&words_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 7);
    const std::uint64_t local = fx_test::ring_advance(words_, r, it, left);
    if (resizable_) drift_.advance(words_, it);
    derive(words_, aux_, it);
    acc_ = acc_ * 31 + comm.allreduce(local, MPI_SUM);
    return it + 1 >= iters_;
  }

  // The app's `halo` injection point inside a parallel region of the host
  // backend: index 0 passes it while the other threads work (with OpenMP,
  // thread 0 is this main thread, the one that calls MPI).
  static void busy_region(fx::Context& ctx, std::int64_t it) {
    Kokkos::View<double*, Kokkos::HostSpace> work("busy", std::int64_t{1} << 18);
    Kokkos::parallel_for("ft_app::busy",
                         Kokkos::RangePolicy<Kokkos::DefaultHostExecutionSpace>(0, work.extent(0)),
                         [&](std::int64_t i) {
                           if (i == 0) ctx.fault_point(fx::Phase::halo);
                           work(i) = std::sqrt(static_cast<double>(i + it));
                         });
    Kokkos::fence();
  }

  void finish(fx::Context& ctx) override {
    const int r = ctx.rank(), p = ctx.size();
    std::vector<Drift> drifts(static_cast<std::size_t>(p));
    fx_test::RingReplayOptions replay;
    if (resizable_) {
      replay.after_step = [&drifts](std::size_t q, std::int64_t it, const std::vector<std::uint64_t>& w) {
        drifts[q].advance(w, it);
      };
    }
    const auto want = fx_test::ring_replay(p, n_, iters_, replay);
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
    problems += halo_problems_ + hook_problems_;
    if (resizable_) {
      problems += drift_.differences(drifts[static_cast<std::size_t>(r)]);
      if (ctx.store().last_restore_level() != fx::CheckpointLevel::none && restored_calls_ == 0)
        problems += " restored a checkpoint but restored() was never called;";
    }
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
          "data_store_ft_app: %d ranks, %d recoveries, last restore %s, first step %lld%s: state matches the "
          "failure-free run bit for bit\n",
          p, ctx.recoveries(), level.c_str(), static_cast<long long>(first_step_),
          resizable_ ? fmt::format(", {} kept entries on rank 0", drift_.kept.size()).c_str() : "");
    }
  }

 private:
  std::int64_t iters_ = 30;
  std::size_t n_ = 4096;
  std::string expect_level_;
  int expect_recoveries_ = -1;
  std::int64_t expect_first_step_ = -1;
  std::vector<std::uint64_t> words_;
  using Aux = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>;
  Aux aux_;
  std::uint64_t acc_ = 0;
  std::int64_t first_step_ = -1;
  bool wildcard_ = false;
  std::string halo_problems_;
  bool resizable_ = false;
  Drift drift_;
  bool halo_in_parallel_ = false;
  bool stepped_ = false;  // since setup(): what RestoreInfo::fresh_process must say
  int restored_calls_ = 0;
  std::string hook_problems_;

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
