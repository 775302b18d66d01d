#pragma once
// Lennard-Jones forces (epsilon = sigma = 1, cut at rc, no shift) on the
// owned atoms from a full neighbour list: each pair is visited from both
// sides, so no force goes back to a ghost's owner (no reverse
// communication). An atom's force is summed in its list's order; its
// energy and virial take half of each pair, and the totals are summed in
// a fixed order (ordered_sum), so they are deterministic on any backend.
#include "atoms.hpp"
#include "exchange.hpp"
#include "neighbor.hpp"

#include <miniapps/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <cstdint>

namespace miniapps::md {

// Per owned atom: force, and half its pairs' energy and virial (r . f).
struct ForceField {
  Vec3s f{"md_f", 0};
  Kokkos::View<double*> energy{"md_energy", 0}, virial{"md_virial", 0};

  void resize(std::int64_t n) {
    if (static_cast<std::int64_t>(f.extent(0)) == n) return;
    f = Vec3s(Kokkos::view_alloc(Kokkos::WithoutInitializing, f.label()), n);
    energy = Kokkos::View<double*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, energy.label()), n);
    virial = Kokkos::View<double*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, virial.label()), n);
  }
};

inline void lj_forces(const AllAtoms& all, const NeighborList& list, double cutoff, ForceField& out) {
  out.resize(all.nlocal);
  const Vec3s x = all.x, f = out.f;
  const Kokkos::View<double*> energy = out.energy, virial = out.virial;
  const auto neigh = list.neighbors();
  const Indices count = list.counts();
  const double cutsq = cutoff * cutoff;
  Kokkos::parallel_for(
      "md::lj_forces", Range(0, all.nlocal), KOKKOS_LAMBDA(const std::int64_t i) {
        const double xi = x(i, 0), yi = x(i, 1), zi = x(i, 2);
        double fx = 0.0, fy = 0.0, fz = 0.0, e = 0.0, w = 0.0;
        const int n = count(i);
        for (int k = 0; k < n; ++k) {
          const int j = neigh(i, k);
          const double dx = xi - x(j, 0), dy = yi - x(j, 1), dz = zi - x(j, 2);
          const double rsq = dx * dx + dy * dy + dz * dz;
          if (rsq >= cutsq) continue;
          const double r2inv = 1.0 / rsq, r6inv = r2inv * r2inv * r2inv;
          const double fpair = r6inv * (48.0 * r6inv - 24.0) * r2inv;  // LAMMPS's lj1, lj2
          fx += dx * fpair;
          fy += dy * fpair;
          fz += dz * fpair;
          e += r6inv * (4.0 * r6inv - 4.0);  // lj3, lj4
          w += rsq * fpair;
        }
        f(i, 0) = fx;
        f(i, 1) = fy;
        f(i, 2) = fz;
        energy(i) = 0.5 * e;
        virial(i) = 0.5 * w;
      });
}

// This rank's pair energy and virial.
struct PairTally {
  double energy = 0.0, virial = 0.0;
};

inline PairTally tally(const ForceField& ff, std::int64_t nlocal) {
  const Kokkos::View<double*> e = ff.energy, w = ff.virial;
  return {ordered_sum(
              nlocal, KOKKOS_LAMBDA(const std::int64_t i) { return e(i); }),
          ordered_sum(
              nlocal, KOKKOS_LAMBDA(const std::int64_t i) { return w(i); })};
}

}  // namespace miniapps::md
