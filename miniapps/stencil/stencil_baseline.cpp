// Sample runs:
//   ./fx run -n 4 build/miniapps/stencil/stencil_baseline --nx 64 --ny 64 --nz 64 --iterations 200
//   ./fx run -n 4 build/miniapps/stencil/stencil_baseline --config configs/stencil.yaml --report base.yaml
//
// Description:
//   The stencil mini-app (3D steady heat equation, 7-point Jacobi) as a
//   plain MPI + Kokkos program, without fx: the reference answer and the
//   reference time for the resilient version in stencil.cpp. It runs the
//   same Solver (stencil.hpp) over raw MPI_COMM_WORLD, so both print the
//   bitwise same `result:` lines.
#include "stencil.hpp"

#include <miniapps/baseline.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace miniapps;
  using stencil::Params;
  return baseline_main<Params>(argc, argv, "stencil_baseline",
                               "3D heat equation, 7-point Jacobi (plain MPI + Kokkos baseline)",
                               [](const Params& p, const PlainComm& comm) {
                                 const int rank = comm.rank();
                                 const auto log = rank0_log("stencil_baseline", rank);
                                 stencil::Solver<PlainComm> solver(p, rank, comm.size(), log);
                                 solver.initialize();
                                 comm.barrier();
                                 while (!solver.step(comm)) {
                                 }
                                 return solver.results(comm);
                               });
}
