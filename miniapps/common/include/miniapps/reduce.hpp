#pragma once
// Reductions whose floating-point result depends only on the problem, not
// on the Kokkos backend, the thread count, or which process holds which
// logical rank: that is what lets a run that lost processes finish with
// the bitwise answer of the failure-free run.
//
// - on a rank: fixed-size chunks are summed sequentially (in parallel over
//   chunks), then the chunk sums in index order on the host;
// - across ranks: per-rank partials are gathered to logical rank 0 in rank
//   order, summed there left to right, and broadcast.
#include <Kokkos_Core.hpp>

#include <array>
#include <cstddef>
#include <cstdint>

namespace miniapps {

// Kokkos rules for overlap with fx's checkpoint copies on a GPU: wait for
// the app's own instance (a global Kokkos::fence(), and a deep_copy given no
// instance, which fences globally first, also wait for the data store's
// copies in flight on their own stream).
inline void fence_own() { Kokkos::DefaultExecutionSpace().fence(); }

// A View's elements as one unmanaged 1D View of the same memory space
// (the View must be contiguous).
template <class V>
auto flat(const V& v) {
  return Kokkos::View<typename V::value_type*, typename V::memory_space, Kokkos::MemoryUnmanaged>(v.data(),
                                                                                                  v.span());
}

// Copy between Views of different memory spaces on the app's own instance.
template <class D, class S>
void copy_own(const D& dst, const S& src) {
  const Kokkos::DefaultExecutionSpace space;
  Kokkos::deep_copy(space, dst, src);
  space.fence();
}

// Sum of the entries of a 1D view (any memory space), left to right.
template <class View>
double sum_in_order(const View& partials) {
  auto h = Kokkos::create_mirror_view(partials);
  copy_own(h, partials);
  double s = 0.0;
  for (std::size_t i = 0; i < h.extent(0); ++i) s += h(i);
  return s;
}

// sum_{i < n} term(i) in an order fixed by n alone.
template <class F>
double ordered_sum(std::int64_t n, const F& term, std::int64_t chunk = 4096) {
  const std::int64_t nchunks = (n + chunk - 1) / chunk;
  Kokkos::View<double*> partials("ordered_sum_partials", static_cast<std::size_t>(nchunks));
  Kokkos::parallel_for(
      "miniapps::ordered_sum", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, nchunks),
      KOKKOS_LAMBDA(const std::int64_t c) {
        const std::int64_t end = (c + 1) * chunk < n ? (c + 1) * chunk : n;
        double s = 0.0;
        for (std::int64_t i = c * chunk; i < end; ++i) s += term(i);
        partials(c) = s;
      });
  return sum_in_order(partials);
}

// Element-wise global sum of N per-rank values in logical-rank order.
// Comm: fx::Comm or miniapps::PlainComm.
template <class Comm, std::size_t N>
std::array<double, N> ordered_allreduce_sum(const Comm& comm, const std::array<double, N>& local) {
  const auto all = comm.gather(local, 0);
  std::array<double, N> sum{};
  for (const auto& part : all)  // empty except on rank 0
    for (std::size_t k = 0; k < N; ++k) sum[k] += part[k];
  comm.bcast(sum.data(), N, 0);
  return sum;
}

template <class Comm>
double ordered_allreduce_sum(const Comm& comm, double local) {
  return ordered_allreduce_sum<Comm, 1>(comm, {local})[0];
}

}  // namespace miniapps
