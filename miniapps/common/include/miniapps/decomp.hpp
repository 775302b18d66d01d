#pragma once
// Deterministic 3D block decomposition of a global index box over P ranks.
// Everything here is a pure function of (P, global extents), so every
// process, including a spare recruited mid-run, derives the same layout
// without communicating.
#include <algorithm>
#include <array>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

namespace miniapps {

using Index3 = std::array<std::int64_t, 3>;
using Dims3 = std::array<int, 3>;

// Part `index` of n items split into `parts` blocks, the first n % parts
// blocks one item larger (the MPI_Dims_create / miniFE convention).
struct Range {
  std::int64_t begin = 0;
  std::int64_t size = 0;
  std::int64_t end() const { return begin + size; }
};

inline Range block_range(std::int64_t n, int parts, int index) {
  const std::int64_t q = n / parts, rem = n % parts;
  return {index * q + std::min<std::int64_t>(index, rem), q + (index < rem ? 1 : 0)};
}

// The block holding item g of block_range(n, parts, .).
inline int block_owner(std::int64_t n, int parts, std::int64_t g) {
  const std::int64_t q = n / parts, rem = n % parts;
  const std::int64_t big = rem * (q + 1);  // items held by the larger blocks
  return static_cast<int>(g < big ? g / (q + 1) : rem + (g - big) / q);
}

// Factor nranks = px * py * pz so that every part holds at least one item
// per dimension and the total cut area is smallest; ties go to the first
// candidate in descending px, then py order (px >= py >= pz for a cube, as
// MPI_Dims_create). Returns {0,0,0} when no factorisation fits.
inline Dims3 dims_create(int nranks, const Index3& global) {
  Dims3 best{0, 0, 0};
  double best_cost = std::numeric_limits<double>::infinity();
  for (int px = nranks; px >= 1; --px) {
    if (nranks % px) continue;
    for (int py = nranks / px; py >= 1; --py) {
      if ((nranks / px) % py) continue;
      const int pz = nranks / px / py;
      if (px > global[0] || py > global[1] || pz > global[2]) continue;
      const double nx = double(global[0]), ny = double(global[1]), nz = double(global[2]);
      const double cost = ny * nz * (px - 1) + nx * nz * (py - 1) + nx * ny * (pz - 1);
      if (cost < best_cost) {
        best_cost = cost;
        best = {px, py, pz};
      }
    }
  }
  return best;
}

// An axis-aligned box of global indices: [lo, lo + n) per dimension.
struct Box {
  Index3 lo{0, 0, 0};
  Index3 n{0, 0, 0};
  std::int64_t volume() const { return n[0] * n[1] * n[2]; }
  bool contains(const Index3& g) const {
    for (int d = 0; d < 3; ++d)
      if (g[d] < lo[d] || g[d] >= lo[d] + n[d]) return false;
    return true;
  }
};

// Ranks laid out row-major over the process grid (z fastest), like a
// Cartesian communicator without reordering.
class Decomp3 {
 public:
  Decomp3() = default;
  Decomp3(int nranks, const Index3& global) : nranks_(nranks), global_(global) {
    dims_ = dims_create(nranks, global);
    if (dims_[0] == 0)
      throw std::invalid_argument("cannot split a " + std::to_string(global[0]) + "x" +
                                  std::to_string(global[1]) + "x" + std::to_string(global[2]) +
                                  " grid over " + std::to_string(nranks) + " ranks");
  }

  int nranks() const { return nranks_; }
  const Dims3& dims() const { return dims_; }
  const Index3& global() const { return global_; }

  Dims3 coords_of(int rank) const {
    return {rank / (dims_[1] * dims_[2]), (rank / dims_[2]) % dims_[1], rank % dims_[2]};
  }
  // -1 outside the process grid.
  int rank_of(const Dims3& c) const {
    for (int d = 0; d < 3; ++d)
      if (c[d] < 0 || c[d] >= dims_[d]) return -1;
    return (c[0] * dims_[1] + c[1]) * dims_[2] + c[2];
  }
  Box box(int rank) const {
    const Dims3 c = coords_of(rank);
    Box b;
    for (int d = 0; d < 3; ++d) {
      const Range r = block_range(global_[d], dims_[d], c[d]);
      b.lo[d] = r.begin;
      b.n[d] = r.size;
    }
    return b;
  }
  int owner(const Index3& g) const {
    return rank_of({block_owner(global_[0], dims_[0], g[0]), block_owner(global_[1], dims_[1], g[1]),
                    block_owner(global_[2], dims_[2], g[2])});
  }

 private:
  int nranks_ = 0;
  Index3 global_{0, 0, 0};
  Dims3 dims_{0, 0, 0};
};

}  // namespace miniapps
