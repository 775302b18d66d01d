// Sample runs:
//   ./fx run -n 4 build/bench/miniapps/bench_stream_copy --mib 64 --reps 20
//
// Description:
//   A STREAM-like copy (a(i) = b(i), Kokkos parallel_for) on every rank at
//   once, the yardstick for the stencil's effective bandwidth: counted as
//   16 bytes per element (one read, one write), summed over the ranks,
//   each repetition timed between barriers by its slowest rank. Prints
//   `result: copy_gbs` (median) and `copy_gbs_best`.
#include <miniapps/plain_comm.hpp>
#include <miniapps/results.hpp>

#include <fx/exit_code.hpp>

#include <CLI/CLI.hpp>
#include <Kokkos_Core.hpp>
#include <mpi.h>

#include <algorithm>
#include <cstdint>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int code = 0;
  {
    const miniapps::PlainComm comm;
    double mib = 64;
    int reps = 20;
    CLI::App cli{"STREAM-like copy bandwidth on every rank at once", "bench_stream_copy"};
    cli.add_option("--mib", mib, "MiB per array and rank")->check(CLI::PositiveNumber);
    cli.add_option("--reps", reps, "timed repetitions")->check(CLI::PositiveNumber);
    try {
      cli.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
      code = comm.rank() == 0 ? cli.exit(e) : (e.get_exit_code() ? 2 : 0);
      if (comm.rank() == 0) fx::write_status(code ? fx::ExitCode::usage : fx::ExitCode::ok, e.what());
      MPI_Finalize();
      return code;
    }
    Kokkos::ScopeGuard kokkos(argc, argv);
    const auto n = static_cast<std::int64_t>(mib * 1024 * 1024 / sizeof(double));
    Kokkos::View<double*> a("a", n), b("b", n);
    Kokkos::deep_copy(b, 1.0);
    std::vector<double> gbs;
    for (int rep = -1; rep < reps; ++rep) {  // rep -1: warm-up
      comm.barrier();
      const double t = miniapps::wtime();
      Kokkos::parallel_for(
          "stream_copy", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, n),
          KOKKOS_LAMBDA(const std::int64_t i) { a(i) = b(i); });
      Kokkos::fence();
      double dt = miniapps::wtime() - t, slowest = 0;
      MPI_Allreduce(&dt, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm.raw());
      if (rep >= 0) gbs.push_back(2.0 * sizeof(double) * double(n) * comm.size() / slowest * 1e-9);
    }
    std::sort(gbs.begin(), gbs.end());
    if (comm.rank() == 0) {
      miniapps::Results r;
      r.add("copy_gbs", gbs[gbs.size() / 2]);
      r.add("copy_gbs_best", gbs.back());
      r.add("ranks", std::int64_t(comm.size()));
      r.add("mib_per_array", mib);
      r.print();
      fx::write_status(fx::ExitCode::ok, "stream copy done");
    }
  }
  MPI_Finalize();
  return code;
}
