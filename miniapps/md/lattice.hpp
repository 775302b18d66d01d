#pragma once
// The initial state of in.lj: an fcc lattice filling the box, and random
// velocities at the set temperature (LAMMPS `velocity all create T seed`:
// uniform components, zero total momentum, scaled to T exactly).
//
// Both are bitwise independent of the decomposition: a position depends on
// its cell and basis site only, and every rank draws the velocity of every
// atom from a counter-based hash of (seed, id), sums momentum and kinetic
// energy over all atoms in an order fixed by the atom count
// (ordered_sum), and keeps its own atoms.
#include "atoms.hpp"
#include "domain.hpp"
#include "params.hpp"

#include <miniapps/reduce.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace miniapps::md {

// Site b of the fcc unit cell, along d, in lattice constants.
KOKKOS_INLINE_FUNCTION double fcc_site(int b, int d) {
  // (0,0,0) (.5,.5,0) (.5,0,.5) (0,.5,.5): site b > 0 is 0 along dimension 3 - b.
  return b == 0 || d == 3 - b ? 0.0 : 0.5;
}

// SplitMix64's finaliser: a bijection of 64-bit words with good avalanche.
KOKKOS_INLINE_FUNCTION std::uint64_t mix64(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// Component d of atom id's raw velocity: uniform in [-0.5, 0.5).
KOKKOS_INLINE_FUNCTION double raw_velocity(std::uint64_t seed, std::int64_t id, int d) {
  const std::uint64_t h =
      mix64(mix64(seed) + 3 * static_cast<std::uint64_t>(id) + static_cast<std::uint64_t>(d));
  return static_cast<double>(h >> 11) * (1.0 / 9007199254740992.0) - 0.5;
}

// v = (raw - vcm) * scale, the same numbers on every rank.
struct VelocityScale {
  double vcm[3] = {0, 0, 0};
  double scale = 1.0;
};

inline VelocityScale velocity_scale(const Params& p) {
  const std::int64_t n = p.atoms();
  const auto seed = static_cast<std::uint64_t>(p.seed);
  VelocityScale s;
  for (int d = 0; d < 3; ++d)
    s.vcm[d] = ordered_sum(
                   n, KOKKOS_LAMBDA(const std::int64_t k) { return raw_velocity(seed, k + 1, d); }) /
               double(n);
  const VelocityScale c = s;
  const double sum_v2 = ordered_sum(
      n, KOKKOS_LAMBDA(const std::int64_t k) {
        double v2 = 0.0;
        for (int e = 0; e < 3; ++e) {
          const double u = raw_velocity(seed, k + 1, e) - c.vcm[e];
          v2 += u * u;
        }
        return v2;
      });
  const double dof = 3.0 * double(n) - 3.0;  // mass 1: sum v^2 = dof * T
  s.scale = sum_v2 > 0.0 ? std::sqrt(p.temperature * dof / sum_v2) : 0.0;
  return s;
}

// Global id of site b in cell (i, j, k), 1-based.
KOKKOS_INLINE_FUNCTION std::int64_t site_id(std::int64_t i, std::int64_t j, std::int64_t k, int b,
                                            std::int64_t ny, std::int64_t nz) {
  return ((i * ny + j) * nz + k) * 4 + b + 1;
}

// This rank's atoms of the lattice, in id order, with their velocities.
inline void create_lattice(const Params& p, const Domain& dom, Atoms& atoms) {
  const double a = p.lattice_constant();
  const std::int64_t cells[3] = {p.nx, p.ny, p.nz};
  std::int64_t first[3], count[3];  // the cells that can hold a site of this sub-box
  for (int d = 0; d < 3; ++d) {
    first[d] = std::max<std::int64_t>(0, static_cast<std::int64_t>(std::floor(dom.lo[d] / a)) - 1);
    const std::int64_t end = std::min(cells[d], static_cast<std::int64_t>(std::ceil(dom.hi[d] / a)) + 1);
    count[d] = end - first[d];
  }
  const std::int64_t ny = p.ny, nz = p.nz, cy = count[1], cz = count[2];
  const std::int64_t f0 = first[0], f1 = first[1], f2 = first[2];
  // Candidate c: cell (f0 + c / (cy cz 4), ...), site c % 4; position as LAMMPS: (cell + site) * a.
  auto site = KOKKOS_LAMBDA(const std::int64_t c, double* x, std::int64_t* id) {
    const int b = static_cast<int>(c % 4);
    const std::int64_t cell = c / 4, k = f2 + cell % cz, j = f1 + (cell / cz) % cy, i = f0 + cell / (cz * cy);
    x[0] = (double(i) + fcc_site(b, 0)) * a;
    x[1] = (double(j) + fcc_site(b, 1)) * a;
    x[2] = (double(k) + fcc_site(b, 2)) * a;
    *id = site_id(i, j, k, b, ny, nz);
  };
  auto mine = KOKKOS_LAMBDA(const std::int64_t c) {
    double x[3];
    std::int64_t id = 0;
    site(c, x, &id);
    return dom.owns(x[0], x[1], x[2]);
  };
  Indices chosen;
  const std::int64_t n = select_indices("md::lattice", 4 * count[0] * cy * cz, mine, chosen);
  atoms.allocate(n);
  const VelocityScale s = velocity_scale(p);
  const auto seed = static_cast<std::uint64_t>(p.seed);
  const Vec3s x = atoms.x, v = atoms.v;
  const Ids ids = atoms.id;
  Kokkos::parallel_for(
      "md::lattice_fill", Range(0, n), KOKKOS_LAMBDA(const std::int64_t m) {
        double xm[3];
        std::int64_t id = 0;
        site(chosen(m), xm, &id);
        ids(m) = id;
        for (int d = 0; d < 3; ++d) {
          x(m, d) = xm[d];
          v(m, d) = (raw_velocity(seed, id, d) - s.vcm[d]) * s.scale;
        }
      });
}

}  // namespace miniapps::md
