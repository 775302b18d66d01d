// Sample runs:
//   ./fx run -n 4 build/miniapps/md/md_baseline
//   ./fx run -n 4 build/miniapps/md/md_baseline --nx 8 --ny 8 --nz 8 --steps 200 --thermo-every 20
//
// Description:
//   The md mini-app (LAMMPS bench/in.lj: Lennard-Jones liquid, 32,000
//   atoms, 100 steps) as a plain MPI + Kokkos program, without fx: the
//   reference answer and time for the resilient version in md.cpp. Same
//   Simulation (md.hpp) over raw MPI_COMM_WORLD; thermo rows as LAMMPS
//   prints them on stdout, then the `result:` lines.
#include "md.hpp"

#include <miniapps/baseline.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  using namespace miniapps;
  using md::Params;
  return baseline_main<Params>(
      argc, argv, "md_baseline", "Lennard-Jones MD, LAMMPS in.lj (plain MPI + Kokkos baseline)",
      [](const Params& p, const PlainComm& comm) {
        md::Simulation<PlainComm> sim(p, comm.rank(), comm.size());
        sim.on_thermo([](const std::string& line) { std::printf("%s\n", line.c_str()); });
        sim.initialize(comm);
        comm.barrier();
        while (!sim.step(comm)) {
        }
        std::fflush(stdout);
        return sim.results(comm);
      });
}
