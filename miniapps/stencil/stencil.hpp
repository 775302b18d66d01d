#pragma once
// The stencil mini-app's numerics, shared by the fx app (stencil.cpp) and
// the plain MPI + Kokkos baseline (stencil_baseline.cpp): parameters, 3D
// decomposition, halo exchange, the 7-point Jacobi sweep, fixed-order norms
// and a decomposition-independent checksum. Templated on the communicator
// (fx::Comm or miniapps::PlainComm), which only needs isend/irecv/wait_all,
// gather and bcast.
//
// Problem: steady-state heat conduction in the unit cube, -lap(u) = 0,
// Dirichlet walls: u = 1 on the x = 0 face, u = 0 on the others, u = 0
// inside at the start; Jacobi on an nx x ny x nz grid of unknowns.
#include <miniapps/decomp.hpp>
#include <miniapps/params.hpp>
#include <miniapps/plain_comm.hpp>
#include <miniapps/reduce.hpp>
#include <miniapps/results.hpp>

#include <Kokkos_Core.hpp>
#include <xxhash.h>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace miniapps::stencil {

struct Params {
  std::int64_t nx = 64, ny = 64, nz = 64;  // global unknowns per dimension
  std::int64_t iterations = 200;           // Jacobi sweeps (upper bound with a tolerance)
  std::int64_t residual_every = 10;        // global residual every k sweeps (and the last)
  std::int64_t progress_every = 50;        // progress line every k sweeps (0: off)
  double tolerance = 0.0;                  // stop once the residual is below (0: never)

  ParamSet declare() {
    ParamSet s("stencil");
    s.add("nx", nx, "global grid points in x", 1)
        .add("ny", ny, "global grid points in y", 1)
        .add("nz", nz, "global grid points in z", 1)
        .add("iterations", iterations, "Jacobi iterations (at most, with --tolerance)", 1)
        .add("residual_every", residual_every, "compute the global residual every k iterations", 1)
        .add("progress_every", progress_every, "print progress every k iterations (0: never)", 0)
        .add("tolerance", tolerance, "stop when the residual norm drops below (0: run all iterations)", 0.0,
             false);
    return s;
  }
  // Cross-parameter checks once the number of ranks is known.
  void check(const ParamSet& set, int nranks) const {
    if (dims_create(nranks, {nx, ny, nz})[0] == 0)
      set.fail("nx", "a " + std::to_string(nx) + "x" + std::to_string(ny) + "x" + std::to_string(nz) +
                         " grid cannot be split over " + std::to_string(nranks) +
                         " ranks with at least one point per rank and dimension");
  }
};

// One ghost layer around the local block: indices 1..n[d] are interior.
using Field = Kokkos::View<double***, Kokkos::LayoutRight>;
using Face = Kokkos::View<double**, Kokkos::LayoutRight>;

// Faces of a block: 0 -x, 1 +x, 2 -y, 3 +y, 4 -z, 5 +z.
struct Block {
  Decomp3 decomp;
  int rank = 0;
  Box box;
  std::array<int, 6> neighbour{-1, -1, -1, -1, -1, -1};

  Block() = default;
  Block(const Params& p, int my_rank, int nranks) : decomp(nranks, {p.nx, p.ny, p.nz}), rank(my_rank) {
    box = decomp.box(rank);
    const Dims3 c = decomp.coords_of(rank);
    for (int f = 0; f < 6; ++f) {
      Dims3 n = c;
      n[f / 2] += (f % 2) ? 1 : -1;
      neighbour[f] = decomp.rank_of(n);
    }
  }
  std::int64_t n(int d) const { return box.n[d]; }
  std::int64_t points() const { return box.volume(); }
};

// Transparent huge pages for the 2 MiB-aligned part of [p, p + n) of
// memory not touched yet (a hint; ignored where unsupported). The data
// store has its own (fx::detail): this header also builds the plain
// baseline, which must not link fx.
inline void advise_huge_pages(void* p, std::size_t n) {
#if defined(__linux__)
  constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + huge - 1) / huge * huge, last = (begin + n) / huge * huge;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
#else
  (void)p;
  (void)n;
#endif
}

// Fill the ghost layer on the global boundary with the wall temperatures.
inline void apply_walls(const Field& u, const Block& b) {
  const double hot = 1.0, cold = 0.0;
  for (int f = 0; f < 6; ++f) {
    if (b.neighbour[f] >= 0) continue;
    const int d = f / 2;
    const std::int64_t at = (f % 2) ? b.n(d) + 1 : 0;
    const double value = f == 0 ? hot : cold;
    auto all = Kokkos::ALL;
    if (d == 0) Kokkos::deep_copy(Kokkos::subview(u, at, all, all), value);
    if (d == 1) Kokkos::deep_copy(Kokkos::subview(u, all, at, all), value);
    if (d == 2) Kokkos::deep_copy(Kokkos::subview(u, all, all, at), value);
  }
}

// Nonblocking face exchange with the (up to) six neighbours.
template <class Comm>
class Halo {
 public:
  Halo() = default;
  explicit Halo(const Block& b) : b_(b) {
    for (int f = 0; f < 6; ++f) {
      if (b.neighbour[f] < 0) continue;
      const int d = f / 2;
      const std::int64_t e0 = d == 0 ? b.n(1) : b.n(0), e1 = d == 2 ? b.n(1) : b.n(2);
      send_[f] = Face("stencil_halo_send", e0, e1);
      recv_[f] = Face("stencil_halo_recv", e0, e1);
      // MPI reads and writes host memory (this MPI is not CUDA-aware); on
      // a host backend the mirrors are the faces themselves.
      send_host_[f] = Kokkos::create_mirror_view(send_[f]);
      recv_host_[f] = Kokkos::create_mirror_view(recv_[f]);
    }
  }

  // Fill u's ghost faces from the neighbours' interior faces.
  void exchange(const Comm& comm, const Field& u) {
    std::vector<request_t<Comm>> reqs;
    reqs.reserve(12);
    // A message leaving through face f carries tag f; it arrives through
    // the neighbour's opposite face f ^ 1.
    for (int f = 0; f < 6; ++f)
      if (b_.neighbour[f] >= 0)
        reqs.push_back(comm.irecv(recv_host_[f].data(), recv_host_[f].span(), b_.neighbour[f], f ^ 1));
    const Kokkos::DefaultExecutionSpace space;  // the app's own instance (see fence_own)
    for (int f = 0; f < 6; ++f) {
      if (b_.neighbour[f] < 0) continue;
      Kokkos::deep_copy(space, send_[f], face(u, f, false));
      if (send_host_[f].data() != send_[f].data()) Kokkos::deep_copy(space, send_host_[f], send_[f]);
      space.fence();
      reqs.push_back(comm.isend(send_host_[f].data(), send_host_[f].span(), b_.neighbour[f], f));
    }
    comm.wait_all(reqs);
    for (int f = 0; f < 6; ++f) {
      if (b_.neighbour[f] < 0) continue;
      if (recv_host_[f].data() != recv_[f].data()) Kokkos::deep_copy(space, recv_[f], recv_host_[f]);
      Kokkos::deep_copy(space, face(u, f, true), recv_[f]);
    }
    space.fence();
  }

 private:
  // The interior layer next to face f, or (ghost) the ghost layer beyond it.
  auto face(const Field& u, int f, bool ghost) const {
    const int d = f / 2;
    const bool high = f % 2;
    const std::int64_t at = high ? (ghost ? b_.n(d) + 1 : b_.n(d)) : (ghost ? 0 : 1);
    const auto r0 = std::pair<std::int64_t, std::int64_t>(1, b_.n(0) + 1);
    const auto r1 = std::pair<std::int64_t, std::int64_t>(1, b_.n(1) + 1);
    const auto r2 = std::pair<std::int64_t, std::int64_t>(1, b_.n(2) + 1);
    using Sub = Kokkos::View<double**, Kokkos::LayoutStride>;
    if (d == 0) return Sub(Kokkos::subview(u, at, r1, r2));
    if (d == 1) return Sub(Kokkos::subview(u, r0, at, r2));
    return Sub(Kokkos::subview(u, r0, r1, at));
  }

  Block b_;
  std::array<Face, 6> send_, recv_;
  std::array<Face::HostMirror, 6> send_host_, recv_host_;
};

// out = mean of in's six neighbours on every interior point. With
// `line_sq`, also store sum_k (out - in)^2 for each (i, j) line, summed in
// k order so the residual has a fixed summation order.
inline void jacobi_sweep(const Field& in, const Field& out, const Block& b,
                         const Kokkos::View<double**, Kokkos::LayoutRight>* line_sq = nullptr) {
  const std::int64_t nx = b.n(0), ny = b.n(1), nz = b.n(2);
  using Policy = Kokkos::MDRangePolicy<Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>;
  const Policy lines({1, 1}, {nx + 1, ny + 1});
  const double sixth = 1.0 / 6.0;
  if (!line_sq) {
    Kokkos::parallel_for(
        "stencil::jacobi", lines, KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
          for (std::int64_t k = 1; k <= nz; ++k)
            out(i, j, k) = (in(i - 1, j, k) + in(i + 1, j, k) + in(i, j - 1, k) + in(i, j + 1, k) +
                            in(i, j, k - 1) + in(i, j, k + 1)) *
                           sixth;
        });
    return;
  }
  const auto sq = *line_sq;
  Kokkos::parallel_for(
      "stencil::jacobi_residual", lines, KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        double s = 0.0;
        for (std::int64_t k = 1; k <= nz; ++k) {
          const double v = (in(i - 1, j, k) + in(i + 1, j, k) + in(i, j - 1, k) + in(i, j + 1, k) +
                            in(i, j, k - 1) + in(i, j, k + 1)) *
                           sixth;
          const double d = v - in(i, j, k);
          s += d * d;
          out(i, j, k) = v;
        }
        sq(i - 1, j - 1) = s;
      });
}

// sum over the interior of u^2, in a fixed order.
inline double local_sum_sq(const Field& u, const Block& b) {
  const std::int64_t nx = b.n(0), ny = b.n(1), nz = b.n(2);
  Kokkos::View<double**, Kokkos::LayoutRight> sq("stencil_line_sq", nx, ny);
  using Policy = Kokkos::MDRangePolicy<Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>;
  Kokkos::parallel_for(
      "stencil::sum_sq", Policy({1, 1}, {nx + 1, ny + 1}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        double s = 0.0;
        for (std::int64_t k = 1; k <= nz; ++k) s += u(i, j, k) * u(i, j, k);
        sq(i - 1, j - 1) = s;
      });
  return sum_in_order(flat(sq));
}

// A bitwise fingerprint of the interior that does not depend on the
// decomposition: the wrap-around sum over points of xxHash3(value bits,
// seed = global point index). Integer addition is exact and commutative,
// so any split of the grid and any reduction order give the same value.
// Computed on the host (xxHash is host code), on a copy of the field where
// it lives elsewhere, so CPU and GPU builds print comparable checksums.
inline std::uint64_t local_checksum(const Field& device_u, const Block& b) {
  const auto u = Kokkos::create_mirror_view(device_u);
  copy_own(u, device_u);
  const std::int64_t nx = b.n(0), ny = b.n(1), nz = b.n(2);
  const std::int64_t x0 = b.box.lo[0], y0 = b.box.lo[1], z0 = b.box.lo[2];
  const std::int64_t gy = b.decomp.global()[1], gz = b.decomp.global()[2];
  using Policy = Kokkos::MDRangePolicy<Kokkos::DefaultHostExecutionSpace, Kokkos::Rank<3>,
                                       Kokkos::IndexType<std::int64_t>>;
  std::uint64_t sum = 0;
  Kokkos::parallel_reduce(
      "stencil::checksum", Policy({1, 1, 1}, {nx + 1, ny + 1, nz + 1}),
      [=](const std::int64_t i, const std::int64_t j, const std::int64_t k, std::uint64_t& acc) {
        const double v = u(i, j, k);
        std::uint64_t bits;
        std::memcpy(&bits, &v, sizeof bits);
        const std::uint64_t gid =
            static_cast<std::uint64_t>(((x0 + i - 1) * gy + (y0 + j - 1)) * gz + (z0 + k - 1));
        acc += XXH3_64bits_withSeed(&bits, sizeof bits, gid);
      },
      sum);
  return sum;
}

// The whole computation, driven one iteration at a time by the fx app or
// by the baseline's loop. The state that defines a run at an iteration is
// current(), iteration(), residual() and start_time(); everything else is
// rebuilt from the parameters.
template <class Comm>
class Solver {
 public:
  using Log = std::function<void(const std::string&)>;

  Solver(const Params& p, int rank, int nranks, Log log = {})
      : p_(p), b_(p, rank, nranks), halo_(b_), log_(std::move(log)) {
    // Not zero-filled here: a recruited spare gets u from the checkpoint
    // and v from its first sweep, so two memsets of the state would only
    // delay the recovery. Only v's ghost shell needs values (walls; the
    // never-read edges and corners zeroed so checkpoints hold no garbage).
    // On transparent huge pages where the host can (fields of tens of
    // MiB): a recruited spare touches both fields for the first time
    // inside its recovery, and 2 MiB page faults cost several times less
    // than 4 KiB ones.
    auto field = [this](const char* label) {
      Field f(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label)), b_.n(0) + 2, b_.n(1) + 2,
              b_.n(2) + 2);
      if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, Field::memory_space>::accessible)
        advise_huge_pages(f.data(), f.span() * sizeof(double));
      return f;
    };
    u_ = field("stencil_u");
    v_ = field("stencil_v");
    line_sq_ = Kokkos::View<double**, Kokkos::LayoutRight>("stencil_line_sq", b_.n(0), b_.n(1));
    zero_shell(v_);
    apply_walls(v_, b_);
  }

  // A fresh start: u = 0 inside, walls on the boundary, iteration 0. Its
  // ghost faces toward neighbours are 0 too, as their interiors.
  void initialize() {
    Kokkos::deep_copy(u_, 0.0);
    apply_walls(u_, b_);
    iteration_ = 0;
    residual_ = -1.0;
    start_time_ = wtime();
  }

  // u's ghost faces toward neighbours do not hold their interiors (a new
  // decomposition filled u): the next step exchanges them first.
  void ghosts_stale() { ghosts_stale_ = true; }

  // Called before each halo exchange (fx: a fault-injection point).
  void on_halo(std::function<void()> hook) { on_halo_ = std::move(hook); }

  // One Jacobi iteration (collective). True when the run is done. The halo
  // exchange fills the ghost faces of the field the sweep wrote, before the
  // swap: u enters every step complete and is only read during it, so a
  // checkpoint's copy of u can run beside the next step
  // (Snapshot::during_next_step) without a write to race with.
  bool step(const Comm& comm) {
    timer_.tick();
    const double t = wtime();
    if (ghosts_stale_) {
      halo_.exchange(comm, u_);
      ghosts_stale_ = false;
    }
    const std::int64_t it = iteration_ + 1;
    const bool measure = it % p_.residual_every == 0 || it == p_.iterations;
    jacobi_sweep(u_, v_, b_, measure ? &line_sq_ : nullptr);
    fence_own();
    if (on_halo_) on_halo_();
    halo_.exchange(comm, v_);
    if (measure) {
      const double local = sum_in_order(flat(line_sq_));
      residual_ = std::sqrt(ordered_allreduce_sum(comm, local));
    }
    std::swap(u_, v_);
    iteration_ = it;
    step_seconds_ += wtime() - t;
    ++steps_done_;
    if (log_ && p_.progress_every > 0 && it % p_.progress_every == 0)
      log_(progress_line(it, p_.iterations, wtime() - start_time_, residual_));
    return it >= p_.iterations || (measure && p_.tolerance > 0 && residual_ < p_.tolerance);
  }

  // The answer (collective; complete on rank 0).
  Results results(const Comm& comm) const {
    Results r;
    r.add("iterations", iteration_);
    r.add("residual", residual_);
    r.add("l2_norm", std::sqrt(ordered_allreduce_sum(comm, local_sum_sq(u_, b_))));
    const auto sums = comm.gather(local_checksum(u_, b_), 0);
    std::uint64_t checksum = 0;
    for (auto s : sums) checksum += s;
    r.add("checksum", hex64(checksum));
    // Loop time (from initialize(): checkpoints and recoveries included)
    // and this process's time inside step(); the effective bandwidth of
    // the sweeps as if every point were read once and written once.
    const double elapsed = wtime() - start_time_;
    const double points = double(p_.nx) * double(p_.ny) * double(p_.nz);
    r.add_timing("solve_s", elapsed);
    r.add_timing("compute_s", step_seconds_);
    r.add_timing("iteration_median_s", timer_.percentile(0.5));
    r.add_timing("iteration_p10_s", timer_.percentile(0.1));
    r.add_timing("bandwidth_gbs",
                 steps_done_ > 0 && step_seconds_ > 0
                     ? 2.0 * sizeof(double) * points * double(steps_done_) / step_seconds_ * 1e-9
                     : 0.0);
    return r;
  }

  // Checkpointed state. current() is the slot of the field being iterated:
  // the double buffer swaps Views, so a checkpoint must read through it.
  Field* current() { return &u_; }
  std::int64_t& iteration() { return iteration_; }
  double& residual() { return residual_; }
  double& start_time() { return start_time_; }
  const Block& block() const { return b_; }
  const Params& params() const { return p_; }
  std::size_t state_bytes() const { return u_.span() * sizeof(double); }

 private:
  void zero_shell(const Field& f) const {
    const auto all = Kokkos::ALL;
    for (int d = 0; d < 3; ++d)
      for (const std::int64_t at : {std::int64_t(0), b_.n(d) + 1}) {
        if (d == 0) Kokkos::deep_copy(Kokkos::subview(f, at, all, all), 0.0);
        if (d == 1) Kokkos::deep_copy(Kokkos::subview(f, all, at, all), 0.0);
        if (d == 2) Kokkos::deep_copy(Kokkos::subview(f, all, all, at), 0.0);
      }
  }

  Params p_;
  Block b_;
  Halo<Comm> halo_;
  Log log_;
  std::function<void()> on_halo_;
  Field u_, v_;
  // Set on every rank alike (the exchange pairs ranks): by resize() only. A
  // checkpoint's u holds its ghost faces as they were, complete.
  bool ghosts_stale_ = false;
  Kokkos::View<double**, Kokkos::LayoutRight> line_sq_;
  std::int64_t iteration_ = 0;
  double residual_ = -1.0;
  double start_time_ = 0.0;
  double step_seconds_ = 0.0;
  std::int64_t steps_done_ = 0;  // by this process (for the bandwidth)
  IterationTimer timer_;
};

}  // namespace miniapps::stencil
