#pragma once
// The periodic box [0, L) in each dimension and its split into equal
// sub-boxes over a 3D rank grid (dims_create: the MPI_Dims_create
// convention). An atom belongs to the rank whose sub-box holds its
// position; coord_of() is the one rule for that, used at creation, at
// migration and after a re-decomposition, so they always agree.
#include "params.hpp"

#include <miniapps/decomp.hpp>

#include <Kokkos_Core.hpp>

namespace miniapps::md {

// Trivially copyable, so kernels capture it by value.
struct Domain {
  double length[3] = {0, 0, 0};  // box edges
  int dims[3] = {1, 1, 1};       // rank grid
  int coord[3] = {0, 0, 0};      // this rank's place in it
  double lo[3] = {0, 0, 0};      // this rank's sub-box [lo, hi)
  double hi[3] = {0, 0, 0};
  int neighbour[6] = {0, 0, 0, 0, 0, 0};  // across face 2d (low) and 2d + 1 (high), periodic
  int rank = 0;

  // Where sub-box c starts along d (c = dims[d]: the box's end).
  KOKKOS_INLINE_FUNCTION double bound(int d, int c) const {
    return c <= 0 ? 0.0 : c >= dims[d] ? length[d] : length[d] * c / dims[d];
  }
  // The sub-box index along d holding x (a wrapped coordinate).
  KOKKOS_INLINE_FUNCTION int coord_of(int d, double x) const {
    int c = static_cast<int>(x / length[d] * dims[d]);
    c = c < 0 ? 0 : c >= dims[d] ? dims[d] - 1 : c;
    while (c > 0 && x < bound(d, c)) --c;
    while (c < dims[d] - 1 && x >= bound(d, c + 1)) ++c;
    return c;
  }
  KOKKOS_INLINE_FUNCTION bool owns(double x, double y, double z) const {
    return coord_of(0, x) == coord[0] && coord_of(1, y) == coord[1] && coord_of(2, z) == coord[2];
  }
  double volume() const { return length[0] * length[1] * length[2]; }
};

inline Domain make_domain(const Params& p, int rank, int nranks) {
  const Decomp3 grid(nranks, {p.nx, p.ny, p.nz});
  const Dims3 c = grid.coords_of(rank);
  const double a = p.lattice_constant();
  const std::int64_t cells[3] = {p.nx, p.ny, p.nz};
  Domain dom;
  dom.rank = rank;
  for (int d = 0; d < 3; ++d) {
    dom.length[d] = double(cells[d]) * a;
    dom.dims[d] = grid.dims()[d];
    dom.coord[d] = c[d];
  }
  for (int d = 0; d < 3; ++d) {
    dom.lo[d] = dom.bound(d, c[d]);
    dom.hi[d] = dom.bound(d, c[d] + 1);
    for (int side = 0; side < 2; ++side) {
      Dims3 n = c;
      n[d] = (c[d] + (side ? 1 : dom.dims[d] - 1)) % dom.dims[d];
      dom.neighbour[2 * d + side] = grid.rank_of(n);
    }
  }
  return dom;
}

}  // namespace miniapps::md
