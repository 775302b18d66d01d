#pragma once
// The atoms a rank owns: positions, velocities and global ids (1-based, as
// LAMMPS tags). These three Views, in their order, are the whole state of
// a run at a rebuild step; everything else (ghosts, bins, neighbour
// lists, forces) is derived from them. Their extent is exactly the owned
// count: migration reallocates them, so a checkpoint holds no slack.
#include "domain.hpp"

#include <Kokkos_Core.hpp>

#include <cstdint>
#include <string>

namespace miniapps::md {

using Vec3s = Kokkos::View<double* [3], Kokkos::LayoutRight>;
using Ids = Kokkos::View<std::int64_t*>;
using Indices = Kokkos::View<int*>;
using Range = Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>;

struct Atoms {
  Vec3s x, v;
  Ids id;

  Atoms() : x("md_x", 0), v("md_v", 0), id("md_id", 0) {}
  std::int64_t size() const { return static_cast<std::int64_t>(id.extent(0)); }
  // Exactly n atoms, contents undefined (labels kept).
  void allocate(std::int64_t n) {
    x = Vec3s(Kokkos::view_alloc(Kokkos::WithoutInitializing, x.label()), n);
    v = Vec3s(Kokkos::view_alloc(Kokkos::WithoutInitializing, v.label()), n);
    id = Ids(Kokkos::view_alloc(Kokkos::WithoutInitializing, id.label()), n);
  }
};

// Positions back into [0, L). Idempotent: x = -1e-17 becomes L, which is
// not < L, so it becomes 0; a second pass changes nothing (a restored
// state is re-wrapped by reneighbor()).
inline void wrap_positions(const Vec3s& x, const Domain& dom) {
  Kokkos::parallel_for(
      "md::wrap", Range(0, x.extent(0)), KOKKOS_LAMBDA(const std::int64_t i) {
        for (int d = 0; d < 3; ++d) {
          double xd = x(i, d);
          if (xd < 0.0) xd += dom.length[d];
          if (xd >= dom.length[d]) xd -= dom.length[d];
          x(i, d) = xd;
        }
      });
}

// The indices i < n with pred(i), ascending, into `out` (grown as needed);
// returns how many.
template <class Pred>
std::int64_t select_indices(const char* label, std::int64_t n, const Pred& pred, Indices& out) {
  std::int64_t count = 0;
  Kokkos::parallel_reduce(
      label, Range(0, n), KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& c) { c += pred(i) ? 1 : 0; },
      count);
  if (static_cast<std::int64_t>(out.extent(0)) < count)
    out =
        Indices(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), count + count / 4 + 16);
  const Indices o = out;
  Kokkos::parallel_scan(
      label, Range(0, n), KOKKOS_LAMBDA(const std::int64_t i, std::int64_t& at, const bool final) {
        if (!pred(i)) return;
        if (final) o(at) = static_cast<int>(i);
        ++at;
      });
  return count;
}

}  // namespace miniapps::md
