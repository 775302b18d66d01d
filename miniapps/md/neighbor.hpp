#pragma once
// Cell bins and full Verlet lists (every pair within cutoff + skin, on
// both atoms' lists), rebuilt at rebuild steps.
//
// The bins are a global grid (box length / bins, at least half of cutoff +
// skin wide), indexed by floor(x / width) on unwrapped coordinates: ghost
// images get bins of their own. An atom's candidates are the bins of a
// fixed stencil around its own (those whose nearest points are within
// the cutoff: LAMMPS's half-width bins, half the distance checks of 27
// full-width ones). Each bin's atoms are sorted by (id, periodic image,
// slot), so an atom's list is ordered by (stencil offset, id, image): the
// order in which its forces are summed does not depend on the
// decomposition (nor on the order atomics filled the bins), and neither do
// the trajectories.
#include "atoms.hpp"
#include "domain.hpp"
#include "exchange.hpp"

#include <Kokkos_Core.hpp>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace miniapps::md {

// The local part of the global bin grid: bins first[d] .. first[d] + n[d] - 1.
struct BinGrid {
  double inv_width[3] = {0, 0, 0};
  std::int64_t first[3] = {0, 0, 0};
  int n[3] = {1, 1, 1};
  int reach[3] = {1, 1, 1};  // stencil half-width in bins

  BinGrid() = default;
  BinGrid(const Domain& dom, double cut) {
    for (int d = 0; d < 3; ++d) {
      const double bins = std::floor(dom.length[d] / (0.5 * cut));
      inv_width[d] = (bins < 1.0 ? 1.0 : bins) / dom.length[d];
      reach[d] = static_cast<int>(std::ceil(cut * inv_width[d]));
      // Ghosts lie within cut of the sub-box; one bin more on each side for rounding.
      first[d] = static_cast<std::int64_t>(std::floor((dom.lo[d] - cut) * inv_width[d])) - 1;
      const auto last = static_cast<std::int64_t>(std::floor((dom.hi[d] + cut) * inv_width[d])) + 1;
      n[d] = static_cast<int>(last - first[d] + 1);
    }
  }
  std::int64_t size() const { return std::int64_t(n[0]) * n[1] * n[2]; }
  // floor(x / width) without a math library call (Kokkos 3's is Experimental, Kokkos 4's not).
  KOKKOS_INLINE_FUNCTION static std::int64_t floor_int(double v) {
    const auto t = static_cast<std::int64_t>(v);
    return v < double(t) ? t - 1 : t;
  }
  KOKKOS_INLINE_FUNCTION int cell(int d, double x) const {
    const std::int64_t c = floor_int(x * inv_width[d]) - first[d];
    return c < 0 ? 0 : c >= n[d] ? n[d] - 1 : static_cast<int>(c);
  }
  KOKKOS_INLINE_FUNCTION int index(int cx, int cy, int cz) const { return (cx * n[1] + cy) * n[2] + cz; }

  // The stencil: for each (dx, dy) bin offset, the run of z offsets
  // dz0..dz1 whose bins can hold a point within cut of a point in bin (0,
  // 0, 0), in a fixed order. A run is contiguous in bin order, so its
  // atoms are one range of the binned arrays.
  using Stencil = Kokkos::View<int* [4], Kokkos::LayoutRight>;
  Stencil stencil(double cut) const {
    auto gap = [&](int d, int o) {  // nearest distance between bins o apart along d
      const int apart = o < 0 ? -o - 1 : o > 0 ? o - 1 : 0;
      return apart / inv_width[d];
    };
    std::vector<int> rows;
    for (int dx = -reach[0]; dx <= reach[0]; ++dx)
      for (int dy = -reach[1]; dy <= reach[1]; ++dy) {
        const double left = cut * cut - gap(0, dx) * gap(0, dx) - gap(1, dy) * gap(1, dy);
        if (left <= 0.0) continue;
        int dz = 0;
        while (dz < reach[2] && gap(2, dz + 1) * gap(2, dz + 1) < left) ++dz;
        rows.insert(rows.end(), {dx, dy, -dz, dz});
      }
    Stencil out("md_stencil", rows.size() / 4);
    const auto host = Kokkos::create_mirror_view(out);
    for (std::size_t k = 0; k < rows.size(); ++k) host(k / 4, k % 4) = rows[k];
    Kokkos::deep_copy(out, host);
    return out;
  }
};

class NeighborList {
 public:
  using Neighbors = Kokkos::View<int**, Kokkos::LayoutRight>;

  void build(const AllAtoms& all, const Domain& dom, double cut) {
    grid_ = BinGrid(dom, cut);
    stencil_ = grid_.stencil(cut);
    bin_atoms(all);
    while (!fill(all, cut)) {
    }
  }
  const Neighbors& neighbors() const { return neigh_; }
  const Indices& counts() const { return count_; }

  // The build's steps: public only because CUDA's extended lambdas
  // (KOKKOS_LAMBDA) may not sit in a private member function.
  void bin_atoms(const AllAtoms& all);
  void sort_bins(const AllAtoms& all);
  bool fill(const AllAtoms& all, double cut);

 private:
  BinGrid grid_;
  BinGrid::Stencil stencil_;
  Indices bin_of_, bin_count_, bin_start_, bin_fill_, binned_;
  Vec3s binned_x_;  // positions in bin order: the candidate loop reads them in sequence
  Neighbors neigh_;
  Indices count_;
  int max_neighbors_ = 128;
};

// Counting sort of owned atoms and ghosts into bins, then each bin sorted.
inline void NeighborList::bin_atoms(const AllAtoms& all) {
  const std::int64_t nall = all.nall, nbins = grid_.size();
  Kokkos::realloc(bin_of_, nall);
  Kokkos::realloc(binned_, nall);
  Kokkos::realloc(bin_count_, nbins);
  Kokkos::realloc(bin_start_, nbins + 1);
  Kokkos::realloc(bin_fill_, nbins);
  const BinGrid g = grid_;
  const Vec3s x = all.x;
  const Indices bin_of = bin_of_, count = bin_count_, start = bin_start_, fill = bin_fill_, binned = binned_;
  Kokkos::parallel_for(
      "md::bin_count", Range(0, nall), KOKKOS_LAMBDA(const std::int64_t i) {
        const int b = g.index(g.cell(0, x(i, 0)), g.cell(1, x(i, 1)), g.cell(2, x(i, 2)));
        bin_of(i) = b;
        Kokkos::atomic_add(&count(b), 1);
      });
  Kokkos::parallel_scan(
      "md::bin_start", Range(0, nbins),
      KOKKOS_LAMBDA(const std::int64_t b, std::int64_t& at, const bool final) {
        if (final) start(b) = static_cast<int>(at);
        at += count(b);
        if (final && b == nbins - 1) start(nbins) = static_cast<int>(at);
      });
  Kokkos::parallel_for(
      "md::bin_fill", Range(0, nall), KOKKOS_LAMBDA(const std::int64_t i) {
        const int b = bin_of(i);
        binned(start(b) + Kokkos::atomic_fetch_add(&fill(b), 1)) = static_cast<int>(i);
      });
  sort_bins(all);
  binned_x_ = Vec3s(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("md_binned_x")), nall);
  const Vec3s bx = binned_x_;
  Kokkos::parallel_for(
      "md::bin_positions", Range(0, nall), KOKKOS_LAMBDA(const std::int64_t k) {
        for (int d = 0; d < 3; ++d) bx(k, d) = x(binned(k), d);
      });
}

// Insertion sort per bin by (id, image, slot): ~20 atoms a bin.
inline void NeighborList::sort_bins(const AllAtoms& all) {
  const Ids id = all.id;
  const Indices image = all.image, start = bin_start_, binned = binned_;
  auto before = KOKKOS_LAMBDA(const int a, const int b) {
    if (id(a) != id(b)) return id(a) < id(b);
    if (image(a) != image(b)) return image(a) < image(b);
    return a < b;
  };
  Kokkos::parallel_for(
      "md::bin_sort", Range(0, grid_.size()), KOKKOS_LAMBDA(const std::int64_t b) {
        for (int k = start(b) + 1; k < start(b + 1); ++k) {
          const int a = binned(k);
          int m = k;
          for (; m > start(b) && before(a, binned(m - 1)); --m) binned(m) = binned(m - 1);
          binned(m) = a;
        }
      });
}

// Each owned atom's neighbours, the stencil's bins around its own in
// order. False (and room for more made) when a list overflowed.
inline bool NeighborList::fill(const AllAtoms& all, double cut) {
  const std::int64_t nlocal = all.nlocal;
  if (static_cast<std::int64_t>(neigh_.extent(0)) < nlocal ||
      static_cast<int>(neigh_.extent(1)) < max_neighbors_)
    neigh_ = Neighbors(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("md_neighbors")),
                       nlocal + nlocal / 8 + 16, max_neighbors_);
  if (static_cast<std::int64_t>(count_.extent(0)) < nlocal)
    count_ = Indices("md_neighbor_counts", neigh_.extent(0));
  const BinGrid g = grid_;
  const Vec3s x = all.x;
  const Indices start = bin_start_, binned = binned_, count = count_;
  const Vec3s bx = binned_x_;
  const Neighbors neigh = neigh_;
  const auto stencil = stencil_;
  const int nstencil = static_cast<int>(stencil_.extent(0));
  const int room = max_neighbors_;
  const double cutsq = cut * cut;
  int most = 0;
  Kokkos::parallel_reduce(
      "md::neighbor_build", Range(0, nlocal),
      KOKKOS_LAMBDA(const std::int64_t i, int& peak) {
        const double xi[3] = {x(i, 0), x(i, 1), x(i, 2)};
        const int c[3] = {g.cell(0, xi[0]), g.cell(1, xi[1]), g.cell(2, xi[2])};
        int n = 0;
        for (int s = 0; s < nstencil; ++s) {
          const int cx = c[0] + stencil(s, 0), cy = c[1] + stencil(s, 1);
          if (cx < 0 || cy < 0 || cx >= g.n[0] || cy >= g.n[1]) continue;
          const int z0 = c[2] + stencil(s, 2) < 0 ? 0 : c[2] + stencil(s, 2);
          const int z1 = c[2] + stencil(s, 3) >= g.n[2] ? g.n[2] - 1 : c[2] + stencil(s, 3);
          if (z0 > z1) continue;
          for (int k = start(g.index(cx, cy, z0)); k < start(g.index(cx, cy, z1) + 1); ++k) {
            const double rx = xi[0] - bx(k, 0), ry = xi[1] - bx(k, 1), rz = xi[2] - bx(k, 2);
            const int j = binned(k);
            // Written before it is known to count: no branch to mispredict.
            if (n < room) neigh(i, n) = j;
            n += rx * rx + ry * ry + rz * rz < cutsq && j != i ? 1 : 0;
          }
        }
        count(i) = n;
        peak = n > peak ? n : peak;
      },
      Kokkos::Max<int>(most));
  if (most <= max_neighbors_) return true;
  max_neighbors_ = most + most / 8;
  return false;
}

}  // namespace miniapps::md
