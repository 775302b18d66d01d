// What a checkpoint of device state costs on a GPU, per rank, with every
// rank of the job sharing the one GPU at once, against the plain copies
// it is judged by, measured in the same run:
//   - the store's device-to-host staging (a member's copy into its pinned
//     buffer on the store's own stream) / a plain pinned copy of the bytes;
//   - an asynchronous commit beside the application's next step (kernels
//     on the app's own instance): the app's wait in commit() and at the
//     ends of the steps until it is committed / the time of the device
//     copy alone;
//   - a recruited rank's restore: the host-to-device part / a plain pinned
//     host-to-device copy of the bytes (the rest is the MPI transfer);
//   - the checksum of the same bytes: XXH3 on the host (what the store
//     takes of host members) against mix64 on the device (what it takes
//     of device members, DeviceStaging::hash) and mix64 on the host (what
//     a holder's check of a device member's copy costs).
// Every time is the median over repetitions of the slowest rank's. Prints
// one `device: {...}` line (rank 0) for scripts/gpu_check.sh.
//
// With --node-dir, every commit also goes to node-local storage there
// (written beside the next steps as the rest of an asynchronous commit).
//
// --progress says who moves the buddy exchange on (checkpoint.memory.
// progress: auto, thread or app).
//
//   device_bench [--mib 1024] [--reps 5] [--step-ms 40] [--node-dir DIR] [--progress auto]
#include <fx/clock.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/exit_code.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx_bench/results.hpp>

#include <CLI/CLI.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "checksum.hpp"
#include "device_staging.hpp"

namespace {

using fx::detail::PinnedSpace;
using Data = Kokkos::View<std::uint64_t*>;  // the default (device) memory space
using Pinned = Kokkos::View<std::uint64_t*, PinnedSpace>;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double slowest(double t) {
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

// The slowest rank's time of op(), all ranks starting together.
template <class Op>
double timed(Op&& op) {
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = fx::now();
  op();
  return slowest(fx::now() - t0);
}

void fill(const Data& d, std::uint64_t seed) {
  Kokkos::parallel_for(
      "bench::fill", d.extent(0),
      KOKKOS_LAMBDA(const std::size_t i) { d(i) = seed * 0x9e3779b97f4a7c15ull + i; });
  Kokkos::DefaultExecutionSpace().fence();
}

// The application's next step: `passes` sweeps over w on its own instance.
void step_kernels(const Data& w, int passes) {
  for (int p = 0; p < passes; ++p)
    Kokkos::parallel_for(
        "bench::step", w.extent(0), KOKKOS_LAMBDA(const std::size_t i) { w(i) = w(i) * 3 + 1; });
  Kokkos::DefaultExecutionSpace().fence();
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App cli{"fx device checkpoint benchmark"};
  std::size_t mib = 1024;
  int reps = 5;
  double step_ms = 40;
  std::string node_dir;
  std::string progress = "auto";
  cli.add_option("--mib", mib, "device state per rank, MiB")->check(CLI::PositiveNumber);
  cli.add_option("--reps", reps, "repetitions (medians)")->check(CLI::PositiveNumber);
  cli.add_option("--step-ms", step_ms, "the app's step beside an asynchronous commit, ms")
      ->check(CLI::PositiveNumber);
  cli.add_option("--node-dir", node_dir, "keep every commit in node-local storage under this directory");
  cli.add_option("--progress", progress, "who moves the buddy exchange on: auto, thread or app")
      ->check(CLI::IsMember({"auto", "thread", "app"}));
  CLI11_PARSE(cli, argc, argv);
  int provided = MPI_THREAD_SINGLE;
  MPI_Init_thread(&argc, &argv, fx::ulfm::kThreadLevelAsked, &provided);  // as fx::run
  Kokkos::initialize(argc, argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  {
    const std::size_t words = mib * (std::size_t{1} << 20) / sizeof(std::uint64_t);
    const std::size_t bytes = words * sizeof(std::uint64_t);
    Data d("state", words), w("work", words);
    Pinned pinned("pinned", words);
    fill(d, 1);
    fill(w, 2);
    const Kokkos::DefaultExecutionSpace own;
    fx::detail::DeviceStaging staging;
    const fx::Member member = fx::make_member("state", d);
    const bool device = static_cast<bool>(member.to_host);
    std::vector<double> d2h, h2d, staged, ratio_staged;
    for (int r = 0; r < reps; ++r) {
      d2h.push_back(timed([&] {
        Kokkos::deep_copy(own, pinned, d);
        own.fence();
      }));
      staged.push_back(timed([&] {
        if (device) {
          member.to_host(staging.space(), staging.buffer(0, bytes));
          staging.fence();
        } else {
          member.save(staging.buffer(0, bytes));
        }
      }));
      ratio_staged.push_back(d2h.back() / staged.back());
      h2d.push_back(timed([&] {
        Kokkos::deep_copy(own, d, pinned);
        own.fence();
      }));
    }
    // The app's step alone, and its kernel count for --step-ms.
    const double pass_s = timed([&] { step_kernels(w, 1); });
    const int passes = std::max(1, static_cast<int>(step_ms * 1e-3 / std::max(pass_s, 1e-6)));
    std::vector<double> step_alone, waited, step_with, ratio_wait;
    fx::CheckpointConfig cfg;
    cfg.memory.every = 1;
    cfg.memory.async = true;
    cfg.memory.depth = 1;  // one version: 4 GiB per rank, 4 ranks fit the host's memory
    cfg.hdf5.restart = false;
    cfg.memory.progress = *fx::from_string<fx::ExchangeProgress>(progress);
    if (!node_dir.empty()) {
      cfg.node.every = 1;
      cfg.node.keep = 1;
      cfg.node.directory = node_dir;
    }
    MPI_Comm dup = MPI_COMM_NULL;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
    const fx::Comm comm(dup);
    auto store = fx::detail::StoreAccess::make(cfg);
    fx::detail::StoreAccess::set_comm(*store, comm);
    store->add("state", d);
    store->set_snapshot("state", fx::Snapshot::during_next_step);
    bool async = false, threaded = false;
    for (int r = 0; r < reps; ++r) {
      fill(d, 10 + static_cast<std::uint64_t>(r));
      step_alone.push_back(timed([&] { step_kernels(w, passes); }));
      double in_commit = 0, at_end = 0;
      step_with.push_back(timed([&] {
        double t = fx::now();
        store->commit(r + 1);
        in_commit = fx::now() - t;
        step_kernels(w, passes);
        t = fx::now();
        fx::detail::StoreAccess::progress(*store);  // the step end
        at_end = fx::now() - t;
      }));
      async = store->last_commit_stats().async;
      threaded = store->last_commit_stats().progress_thread;
      // Until it is committed: more steps, the app's time in progress()
      // (storage conclusions included) counted; a flush() at the end, too.
      double later = 0;
      bool committed = store->committed_iteration() == r + 1;
      for (int k = 0; k < 100 && !committed; ++k) {
        step_kernels(w, passes);
        const double t = fx::now();
        committed = fx::detail::StoreAccess::progress(*store);
        later += fx::now() - t;
      }
      const double t = fx::now();
      fx::detail::StoreAccess::flush(*store);
      later += fx::now() - t;
      waited.push_back(slowest(in_commit + at_end + later));
      ratio_wait.push_back(waited.back() / staged[static_cast<std::size_t>(r)]);
    }
    // A recruited rank (the last) restores: fresh device memory, a new store.
    std::vector<double> restore, restore_h2d;
    const int victim = ranks - 1;
    for (int r = 0; r < reps && ranks > 1; ++r) {
      store->commit(100 + r);
      fx::detail::StoreAccess::flush(*store);
      if (rank == victim) {
        store.reset();
        d = Data("state", words);
        store = fx::detail::StoreAccess::make(cfg);
        store->add("state", d);
        store->set_snapshot("state", fx::Snapshot::during_next_step);
      }
      fx::detail::StoreAccess::set_comm(*store, comm);
      restore.push_back(timed([&] { fx::detail::StoreAccess::restore(*store); }));
      restore_h2d.push_back(slowest(rank == victim ? store->last_restore_stats().device_seconds : 0.0));
    }
    // Checksums of the same bytes: on the host (XXH3, one pass over pinned
    // memory) and on the device (the store's mix64 reduction).
    // The host's mix64 is what a holder's check of a device member costs.
    std::vector<double> host_hash, host_mix64, device_hash;
    fx::detail::DeviceStaging hasher;
    for (int r = 0; r < reps; ++r) {
      host_hash.push_back(timed([&] { (void)fx::detail::hash_bytes(pinned.data(), bytes); }));
      host_mix64.push_back(
          timed([&] { (void)fx::detail::hash_bytes(fx::detail::HashKind::mix64, pinned.data(), bytes); }));
      device_hash.push_back(timed([&] {
        (void)hasher.hash(0, reinterpret_cast<const std::byte*>(d.data()), bytes);
        hasher.fence();
      }));
    }
    store.reset();
    MPI_Comm_free(&dup);
    if (rank == 0) {
      const double gib = static_cast<double>(bytes) / double(1 << 30);
      fx_bench::Line("device")
          .add("ranks", ranks)
          .add("mib_per_rank", mib)
          .add("device_memory", device)
          .add("node_local", !node_dir.empty())
          .add("reps", reps)
          .add("pinned_d2h_s", median(d2h))
          .add("pinned_d2h_gbs", gib / median(d2h))
          .add("staged_d2h_s", median(staged))
          .add("staged_d2h_gbs", gib / median(staged))
          .add("staging_over_pinned", median(ratio_staged))
          .add("pinned_h2d_s", median(h2d))
          .add("commit_async", async)
          .add("progress", progress)
          .add("progress_thread", threaded)
          .add("step_s", median(step_alone))
          .add("step_with_commit_s", median(step_with))
          .add("app_wait_s", median(waited))
          .add("app_wait_over_copy", median(ratio_wait))
          .add("restore_s", restore.empty() ? 0.0 : median(restore))
          .add("restore_h2d_s", restore_h2d.empty() ? 0.0 : median(restore_h2d))
          .add("restore_h2d_over_pinned", restore_h2d.empty() ? 0.0 : median(restore_h2d) / median(h2d))
          .add("hash_host_s", median(host_hash))
          .add("hash_host_mix64_s", median(host_mix64))
          .add("hash_device_s", median(device_hash))
          .print();
      fx::write_status(fx::ExitCode::ok, "benchmark done");
    }
  }
  Kokkos::finalize();
  MPI_Finalize();
  return 0;
}
