#pragma once
// A tiny 3D Jacobi solver for the Reinit and TryBlock tests: -lap(u) = f on
// nx*ny*nz interior points, u = 0 outside, slabs of z-planes per rank with
// one ghost plane on each side. Every point is updated with the same
// operations in the same order as in the serial replay, so a run that
// recovered from failures must give the failure-free answer bit for bit.
#include <fx/fx.hpp>

#include <cstdint>
#include <cstring>
#include <vector>

namespace jacobi {

struct Grid {
  int nx = 16, ny = 16, nz = 16;

  // The z-planes [first, first + count) of rank r out of p.
  int first(int r, int p) const { return r * (nz / p) + std::min(r, nz % p); }
  int count(int r, int p) const { return nz / p + (r < nz % p ? 1 : 0); }
  std::size_t plane() const { return static_cast<std::size_t>(nx) * static_cast<std::size_t>(ny); }

  static Grid from(const fx::Context& ctx) {
    Grid g;
    g.nx = ctx.config().get<int>("nx", g.nx);
    g.ny = ctx.config().get<int>("ny", g.ny);
    g.nz = ctx.config().get<int>("nz", g.nz);
    return g;
  }
};

inline double source(int x, int y, int z) {
  return static_cast<double>((x * 7 + y * 13 + z * 31) % 17) / 17.0;
}

// One sweep over `planes` planes of `u` (with ghosts at 0 and planes + 1)
// into `out` (same shape); z0 is the global index of the first owned plane.
inline void sweep(const Grid& g, int z0, int planes, const std::vector<double>& u, std::vector<double>& out) {
  const std::size_t pl = g.plane();
  const double h2 = 1.0 / (static_cast<double>(g.nx + 1) * static_cast<double>(g.nx + 1));
  for (int k = 1; k <= planes; ++k) {
    for (int y = 0; y < g.ny; ++y) {
      for (int x = 0; x < g.nx; ++x) {
        const std::size_t i = static_cast<std::size_t>(k) * pl + static_cast<std::size_t>(y * g.nx + x);
        const double xm = x > 0 ? u[i - 1] : 0.0, xp = x + 1 < g.nx ? u[i + 1] : 0.0;
        const double ym = y > 0 ? u[i - static_cast<std::size_t>(g.nx)] : 0.0;
        const double yp = y + 1 < g.ny ? u[i + static_cast<std::size_t>(g.nx)] : 0.0;
        out[i] = (((((xm + xp) + ym) + yp) + u[i - pl]) + u[i + pl] + h2 * source(x, y, z0 + k - 1)) / 6.0;
      }
    }
  }
}

// The owned planes' bit patterns, summed: an exact checksum for ABFT checks.
inline std::uint64_t checksum(const Grid& g, int planes, const std::vector<double>& u) {
  std::uint64_t s = 0;
  for (std::size_t i = g.plane(); i < (static_cast<std::size_t>(planes) + 1) * g.plane(); ++i) {
    std::uint64_t b = 0;
    std::memcpy(&b, &u[i], sizeof b);
    s += b;
  }
  return s;
}

inline std::uint64_t fnv(const double* d, std::size_t n, std::uint64_t h = 1469598103934665603ULL) {
  const auto* b = reinterpret_cast<const unsigned char*>(d);
  for (std::size_t i = 0; i < n * sizeof(double); ++i) h = (h ^ b[i]) * 1099511628211ULL;
  return h;
}

// The failure-free answer: `iters` sweeps on one process.
inline std::uint64_t replay(const Grid& g, std::int64_t iters) {
  std::vector<double> u((static_cast<std::size_t>(g.nz) + 2) * g.plane(), 0.0), v = u;
  for (std::int64_t it = 0; it < iters; ++it) {
    sweep(g, 0, g.nz, u, v);
    std::swap(u, v);
  }
  return fnv(u.data() + g.plane(), static_cast<std::size_t>(g.nz) * g.plane());
}

// FNV of the owned planes of every rank, in global order (on rank 0; 0 elsewhere).
inline std::uint64_t digest(const fx::Context& ctx, const Grid& g, const std::vector<double>& u) {
  const int p = ctx.size(), r = ctx.rank();
  const int n = g.count(r, p) * static_cast<int>(g.plane());
  std::vector<int> counts(static_cast<std::size_t>(p)), offsets(static_cast<std::size_t>(p));
  for (int q = 0; q < p; ++q) {
    counts[static_cast<std::size_t>(q)] = g.count(q, p) * static_cast<int>(g.plane());
    offsets[static_cast<std::size_t>(q)] = g.first(q, p) * static_cast<int>(g.plane());
  }
  std::vector<double> all(r == 0 ? static_cast<std::size_t>(g.nz) * g.plane() : 0);
  FX_CHECK_MPI(ctx.comm(), MPI_Gatherv(u.data() + g.plane(), n, MPI_DOUBLE, all.data(), counts.data(),
                                       offsets.data(), MPI_DOUBLE, 0, ctx.comm().raw()));
  return r == 0 ? fnv(all.data(), all.size()) : 0;
}

}  // namespace jacobi
