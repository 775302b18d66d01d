#pragma once
// Moving block-distributed data from one decomposition to another (after
// fx shrinks the job): which old blocks overlap a new one, and copying the
// overlap between two row-major (z fastest) local arrays, each with its own
// ghost width. Pure index arithmetic; no communication.
#include <miniapps/decomp.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace miniapps {

// The intersection of two boxes (n = 0 in some dimension when disjoint).
inline Box intersect(const Box& a, const Box& b) {
  Box out;
  for (int d = 0; d < 3; ++d) {
    out.lo[d] = std::max(a.lo[d], b.lo[d]);
    out.n[d] = std::max<std::int64_t>(0, std::min(a.lo[d] + a.n[d], b.lo[d] + b.n[d]) - out.lo[d]);
  }
  return out;
}

// The ranks of `old` whose boxes overlap `mine`, ascending.
inline std::vector<int> overlapping_ranks(const Decomp3& old, const Box& mine) {
  std::vector<int> out;
  for (int q = 0; q < old.nranks(); ++q)
    if (intersect(old.box(q), mine).volume() > 0) out.push_back(q);
  return out;
}

// dst[g] = src[g] for every global index g in both boxes. Each array holds
// its box plus `ghost` layers on every side, row-major, z fastest.
template <class T>
void copy_overlap(const Box& from, const T* src, int src_ghost, const Box& to, T* dst, int dst_ghost) {
  const Box o = intersect(from, to);
  if (o.volume() == 0) return;
  const std::int64_t sy = from.n[1] + 2 * src_ghost, sz = from.n[2] + 2 * src_ghost;
  const std::int64_t dy = to.n[1] + 2 * dst_ghost, dz = to.n[2] + 2 * dst_ghost;
  for (std::int64_t i = 0; i < o.n[0]; ++i)
    for (std::int64_t j = 0; j < o.n[1]; ++j) {
      const std::int64_t gx = o.lo[0] + i, gy = o.lo[1] + j, gz = o.lo[2];
      const T* s = src + ((gx - from.lo[0] + src_ghost) * sy + (gy - from.lo[1] + src_ghost)) * sz +
                   (gz - from.lo[2] + src_ghost);
      T* d = dst + ((gx - to.lo[0] + dst_ghost) * dy + (gy - to.lo[1] + dst_ghost)) * dz +
             (gz - to.lo[2] + dst_ghost);
      std::copy(s, s + o.n[2], d);
    }
}

}  // namespace miniapps
