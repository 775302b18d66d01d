#pragma once
// The md mini-app's parameters (LAMMPS bench/in.lj by default): the box in
// fcc unit cells, the Lennard-Jones and integration settings, output.
#include <miniapps/decomp.hpp>
#include <miniapps/params.hpp>

#include <cmath>
#include <cstdint>
#include <string>

namespace miniapps::md {

struct Params {
  std::int64_t nx = 20, ny = 20, nz = 20;  // fcc unit cells per dimension (4 atoms each)
  std::int64_t steps = 100;                // velocity Verlet steps
  std::int64_t thermo_every = 100;         // a thermo row every k steps (and at the last)
  std::int64_t reneighbor_every = 20;      // rebuild steps: multiples of k (never in between)
  std::int64_t seed = 87287;               // initial velocities
  double density = 0.8442;                 // reduced number density
  double temperature = 1.44;               // initial temperature
  double dt = 0.005;                       // time step
  double cutoff = 2.5;                     // LJ cutoff (sigma = epsilon = 1, no shift)
  double skin = 0.3;                       // neighbour skin

  ParamSet declare() {
    ParamSet s("md");
    s.add("nx", nx, "fcc unit cells in x", 1)
        .add("ny", ny, "fcc unit cells in y", 1)
        .add("nz", nz, "fcc unit cells in z", 1)
        .add("steps", steps, "time steps", 1)
        .add("thermo_every", thermo_every, "print a thermo row every k steps (and after the last)", 1)
        .add("reneighbor_every", reneighbor_every,
             "rebuild ghosts and neighbour lists on steps that are multiples of k", 1)
        .add("seed", seed, "seed of the initial velocities", 0)
        .add("density", density, "reduced number density of the fcc lattice", 0.0, true)
        .add("temperature", temperature, "initial temperature", 0.0, true)
        .add("dt", dt, "time step (LJ units)", 0.0, true)
        .add("cutoff", cutoff, "Lennard-Jones cutoff (sigma units)", 0.0, true)
        .add("skin", skin, "neighbour list skin beyond the cutoff", 0.0, false);
    return s;
  }

  double lattice_constant() const { return std::pow(4.0 / density, 1.0 / 3.0); }  // as LAMMPS
  double ghost_cutoff() const { return cutoff + skin; }
  std::int64_t atoms() const { return 4 * nx * ny * nz; }

  // Ghosts come from the face neighbours only (one hop per dimension), so
  // every sub-box must be at least as wide as the ghost cutoff.
  void check(const ParamSet& set, int nranks) const {
    const Index3 cells{nx, ny, nz};
    const Dims3 dims = dims_create(nranks, cells);
    const std::string box = std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz);
    if (dims[0] == 0)
      set.fail("nx", "a box of " + box + " cells cannot be split over " + std::to_string(nranks) + " ranks");
    const char* keys[3] = {"nx", "ny", "nz"};
    for (int d = 0; d < 3; ++d) {
      const double width = double(cells[d]) * lattice_constant() / dims[d];
      if (width < ghost_cutoff())
        set.fail(keys[d], "the sub-boxes of a " + box + " box over " + std::to_string(nranks) +
                              " ranks are " + std::to_string(width) + " wide along " + "xyz"[d] +
                              ", less than cutoff + skin = " + std::to_string(ghost_cutoff()));
    }
  }
};

}  // namespace miniapps::md
