// Sample runs:
//   ./fx run -n 4 build/miniapps/minife/minife_baseline --nx 30 --ny 30 --nz 30
//   ./fx run -n 4 build/miniapps/minife/minife_baseline --config configs/minife.yaml --report base.yaml
//
// Description:
//   The minife mini-app (finite-element heat conduction on a brick of
//   hexahedra, CSR matrix, unpreconditioned CG) as a plain MPI + Kokkos
//   program, without fx: the reference answer and time for the resilient
//   version in minife.cpp. Same assembly and CG (minife.hpp) over raw
//   MPI_COMM_WORLD, so both print the same `result:` lines.
#include "minife.hpp"

#include <miniapps/baseline.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace miniapps;
  using minife::Params;
  return baseline_main<Params>(argc, argv, "minife_baseline",
                               "miniFE-like FE heat conduction + CG (plain MPI + Kokkos baseline)",
                               [](const Params& p, const PlainComm& comm) {
                                 const int rank = comm.rank();
                                 const auto log = rank0_log("minife_baseline", rank);
                                 minife::Cg<PlainComm> cg(p, rank, comm.size(), log);
                                 cg.initialize(comm);
                                 while (!cg.step(comm)) {
                                 }
                                 return cg.results(comm);
                               });
}
