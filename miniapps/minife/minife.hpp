#pragma once
// The minife mini-app's numerics, shared by the fx app (minife.cpp) and the
// plain MPI + Kokkos baseline (minife_baseline.cpp). What Mantevo miniFE
// does, written anew: steady-state heat conduction -div(grad u) = 1 on a
// brick of nx x ny x nz unit hexahedral elements with trilinear (8-node)
// shape functions, u = 0 on the whole boundary (Dirichlet). The matrix has
// the 27-point connectivity of the node grid, is assembled from element
// matrices computed by 2x2x2 Gauss quadrature, distributed by rows (each
// rank owns a 3D block of nodes) and stored in CSR form in Kokkos Views;
// unpreconditioned conjugate gradients solve it, with a halo exchange of
// the search direction before each sparse matrix-vector product.
//
// Every entry of A and b is summed in a fixed element order and every dot
// product in a fixed order (miniapps/reduce.hpp), so the CG iterates do not
// depend on which process holds which logical rank.
#include <miniapps/decomp.hpp>
#include <miniapps/params.hpp>
#include <miniapps/plain_comm.hpp>
#include <miniapps/reduce.hpp>
#include <miniapps/results.hpp>

#include "summary.hpp"

#include <fx/enum_names.hpp>

#include <Kokkos_Core.hpp>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <functional>
#include <limits>
#include <map>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace miniapps::minife {

// Which linear system: `unit` is fx's own (unit elements, u = 0 on the
// whole boundary, boundary rows and columns dropped, a relative-residual
// stop); `minife` is Mantevo miniFE's (the unit cube, elements 1/nx wide,
// u = 1 on the x = 1 face and 0 on the others imposed as miniFE does, its
// truncated Gauss abscissa (kMinifeGaussPoint), the full 27-point
// structure kept, an absolute-residual stop at machine epsilon tested at
// the top of the next iteration as miniFE does, or 200 iterations,
// verify_solution against the analytic solution).
enum class ProblemKind { unit, minife };

}  // namespace miniapps::minife

FX_ENUM_NAMES(miniapps::minife::ProblemKind, {miniapps::minife::ProblemKind::unit, "unit"},
              {miniapps::minife::ProblemKind::minife, "minife"})

namespace miniapps::minife {

struct Params {
  ProblemKind problem = ProblemKind::unit;
  std::int64_t nx = 20, ny = 20, nz = 20;  // elements per dimension
  std::int64_t max_iterations = 0;         // CG iterations at most (0: the problem's, 500 or 200)
  std::int64_t progress_every = 20;        // progress line every k iterations (0: off)
  double tolerance = 1e-8;                 // problem unit: stop at ||r|| / ||b|| <= tolerance
  bool verify_solution = true;             // problem minife: compare with the analytic solution
  bool summary = false;                    // write miniFE's YAML summary (rank 0)
  bool abft = false;                       // fx app: each iteration a checked TryBlock (minife.cpp)
  bool static_matrix = true;               // fx app: A and b are static store members (minife.cpp)

  ParamSet declare() {
    ParamSet s("minife");
    s.add("problem", problem, "the linear system: unit (fx's) or minife (Mantevo miniFE's)")
        .add("nx", nx, "elements in x (2 or more, for an interior node)", 2)
        .add("ny", ny, "elements in y (2 or more)", 2)
        .add("nz", nz, "elements in z (2 or more)", 2)
        .add("max_iterations", max_iterations, "CG iterations at most (0: 500 for unit, 200 for minife)", 0)
        .add("progress_every", progress_every, "print progress every k iterations (0: never)", 0)
        .add("tolerance", tolerance,
             "problem unit: relative residual ||r||/||b|| to stop at (minife stops at ||r|| <= machine "
             "epsilon)",
             0.0, true)
        .add("verify_solution", verify_solution,
             "problem minife: check x near (0.5, 0.5, 0.5) against the analytic solution as miniFE does")
        .add("summary", summary,
             "problem minife: write miniFE's YAML summary to miniFE.<nx>x<ny>x<nz>.P<ranks>.<date-time>.yaml "
             "(rank 0)")
        .add(
            "abft", abft,
            "fx app: run each CG iteration in a TryBlock that checks the CG state for corruption and retries "
            "(the baseline ignores it)")
        .add(
            "static_matrix", static_matrix,
            "fx app: register A and b as static store members, so a recruited spare receives its rows from a "
            "buddy instead of assembling them (the baseline ignores it)");
    return s;
  }
  void check(const ParamSet& set, int nranks) const {
    if (dims_create(nranks, {nx + 1, ny + 1, nz + 1})[0] == 0)
      set.fail("nx", "a mesh of " + std::to_string(nx + 1) + "x" + std::to_string(ny + 1) + "x" +
                         std::to_string(nz + 1) + " nodes cannot be split over " + std::to_string(nranks) +
                         " ranks with at least one node per rank and dimension");
  }
  std::int64_t iteration_limit() const {
    return max_iterations > 0 ? max_iterations : problem == ProblemKind::minife ? 200 : 500;
  }
};

using Vector = Kokkos::View<double*>;

// Vectors of the given lengths carved from one allocation: the k-th starts
// on a 4 KiB boundary plus k KiB, so any two differ by at least 1 KiB
// modulo 4 KiB, whatever the heap held before. Allocated one by one, CG's
// vectors landed wherever the heap had room, which differed between the
// fx app and its baseline: at 4 ranks (vectors under glibc's 128 KiB mmap
// threshold) every kernel, waxpby too, ran 13 % slower in one of them on a
// 16-core machine, and not at 1 rank, where both got fresh pages. A load
// whose address equals a recent store's modulo 4 KiB waits for it (4K
// aliasing); at 1 KiB apart the store is 128 elements old.
inline std::vector<Vector> staggered_vectors(const std::string& label,
                                             const std::vector<std::size_t>& lengths) {
  constexpr std::size_t page = 4096 / sizeof(double), kib = 1024 / sizeof(double);
  std::vector<std::size_t> start;
  std::size_t end = 0;
  for (std::size_t k = 0; k < lengths.size(); ++k) {
    const std::size_t at = (end + page - 1) / page * page + (k % 4) * kib;
    start.push_back(at);
    end = at + lengths[k];
  }
  const Vector block(label, end + page);
  const auto address = reinterpret_cast<std::uintptr_t>(block.data()) / sizeof(double);
  const std::size_t shift = (page - address % page) % page;  // to the block's first 4 KiB boundary
  std::vector<Vector> out;
  for (std::size_t k = 0; k < lengths.size(); ++k)
    out.push_back(Kokkos::subview(block, std::make_pair(shift + start[k], shift + start[k] + lengths[k])));
  return out;
}

// The 2-point Gauss abscissa on [-1, 1] as miniFE has it (fem/gauss_pts.hpp:
// 0.577350269 for 1/sqrt(3)). Its element matrices are therefore ~3e-10
// off the exact ones (entries that are 0 on a cube come out near 2.7e-11
// h); problem minife uses it so that A and b are miniFE's to rounding.
constexpr double kMinifeGaussPoint = 0.577350269;

// Element stiffness matrix of -laplace on an hx x hy x hz brick with
// trilinear shape functions; node a = ax + 2 ay + 4 az. 2-point Gauss
// (abscissa +-gauss_point on [-1, 1]) is exact here with the default.
using ElementMatrix = std::array<std::array<double, 8>, 8>;

inline ElementMatrix element_matrix(const std::array<double, 3>& h = {1.0, 1.0, 1.0},
                                    double gauss_point = 1.0 / std::sqrt(3.0)) {
  const double g[2] = {0.5 - 0.5 * gauss_point, 0.5 + 0.5 * gauss_point};
  const double weight = h[0] * h[1] * h[2] / 8;
  ElementMatrix ke{};
  for (int q = 0; q < 8; ++q) {
    const double xi[3] = {g[q & 1], g[(q >> 1) & 1], g[(q >> 2) & 1]};
    double grad[8][3];
    for (int a = 0; a < 8; ++a) {
      const int bit[3] = {a & 1, (a >> 1) & 1, (a >> 2) & 1};
      double n1[3], d1[3];
      for (int d = 0; d < 3; ++d) {
        n1[d] = bit[d] ? xi[d] : 1.0 - xi[d];
        d1[d] = (bit[d] ? 1.0 : -1.0) / h[static_cast<std::size_t>(d)];
      }
      grad[a][0] = d1[0] * n1[1] * n1[2];
      grad[a][1] = n1[0] * d1[1] * n1[2];
      grad[a][2] = n1[0] * n1[1] * d1[2];
    }
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b)
        ke[a][b] += weight * (grad[a][0] * grad[b][0] + grad[a][1] * grad[b][1] + grad[a][2] * grad[b][2]);
  }
  return ke;
}

// The mesh of nodes and which rows couple to which: pure functions of the
// parameters, shared by the shape (known without assembly) and the
// assembly.
class Mesh {
 public:
  Mesh(const Params& p) : kind_(p.problem), nodes_{p.nx + 1, p.ny + 1, p.nz + 1} {}
  const Index3& nodes() const { return nodes_; }
  ProblemKind kind() const { return kind_; }
  bool inside(const Index3& g) const {
    for (int d = 0; d < 3; ++d)
      if (g[d] < 0 || g[d] >= nodes_[d]) return false;
    return true;
  }
  bool boundary(const Index3& g) const {
    for (int d = 0; d < 3; ++d)
      if (g[d] == 0 || g[d] == nodes_[d] - 1) return true;
    return false;
  }
  // miniFE: u = 1 on the x = 1 face (edges included) ...
  bool hot(const Index3& g) const { return g[0] == nodes_[0] - 1; }
  // ... imposed after u = 0 on the others, whose columns drop out first:
  // a node on an edge of the x = 1 face holds 1 but lends 0 to its neighbours.
  bool cold(const Index3& g) const {
    return g[0] == 0 || g[1] == 0 || g[2] == 0 || g[1] == nodes_[1] - 1 || g[2] == nodes_[2] - 1;
  }
  // The columns of row g, in a fixed order. unit: a boundary row has its
  // diagonal only and boundary columns drop out; minife: all 27 neighbours
  // in the mesh (miniFE keeps the structure and zeroes the values).
  template <class F>
  void for_each_column(const Index3& g, F&& f) const {
    const bool unit = kind_ == ProblemKind::unit;
    if (unit && boundary(g)) {
      f(g);
      return;
    }
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          const Index3 m{g[0] + dx, g[1] + dy, g[2] + dz};
          if (inside(m) && !(unit && boundary(m))) f(m);
        }
  }

 private:
  ProblemKind kind_;
  Index3 nodes_;
};

// The local rows of A and b, and the plan of the halo exchange. The
// constructor fixes the shape (which rows, how many ghosts: cheap);
// assemble() fills the rest (the matrix: the expensive part), unless a
// data store restore already did (static members: packed_rows.hpp and
// for_each_halo_member).
struct Problem {
  Decomp3 decomp;  // of the node grid
  Box box;         // my nodes
  std::int64_t n_own = 0, n_ghost = 0;
  Kokkos::View<std::int64_t*> row_ptr;
  Kokkos::View<int*> col;  // local: [0, n_own) mine, then ghosts
  Kokkos::View<double*> val;
  Vector b;
  // Halo: for neighbour k, send send_idx[send_ptr[k], send_ptr[k+1]) and
  // receive ghosts [recv_ptr[k], recv_ptr[k+1]) (offsets past n_own).
  std::vector<int> neighbours;
  std::vector<std::int64_t> send_ptr, recv_ptr;
  Kokkos::View<int*> send_idx;
  std::int64_t nnz() const { return static_cast<std::int64_t>(val.extent(0)); }
  bool assembled() const { return row_ptr.extent(0) == static_cast<std::size_t>(n_own) + 1; }

  Problem() = default;
  Problem(const Params& p, int rank, int nranks);
  // Returns the seconds of its first pass (miniFE's matrix structure generation).
  double assemble(const Params& p);
  // assemble()'s first steps: the ghosts' columns and the halo's receive
  // side; the row lengths and the halo's send side.
  std::vector<int> number_ghosts(const Mesh& mesh, const Box& grown);
  void plan_rows(const Mesh& mesh, const Kokkos::View<std::int64_t*>::HostMirror& ptr);

  // The halo plan assemble() fills, by name: what an app registers as
  // static data-store members beside the packed rows (packed_rows.hpp:
  // f(name, member&)).
  template <class F>
  void for_each_halo_member(F&& f) {
    f("halo_send_idx", send_idx);
    f("halo_neighbours", neighbours);
    f("halo_send_ptr", send_ptr);
    f("halo_recv_ptr", recv_ptr);
  }

  // Index of g in my rows, z fastest.
  std::int64_t local(const Index3& g) const { return local_in(box, g); }
  static std::int64_t local_in(const Box& bx, const Index3& g) {
    return ((g[0] - bx.lo[0]) * bx.n[1] + (g[1] - bx.lo[1])) * bx.n[2] + (g[2] - bx.lo[2]);
  }
  Index3 node(std::int64_t i) const {
    return Index3{box.lo[0] + i / (box.n[1] * box.n[2]), box.lo[1] + (i / box.n[2]) % box.n[1],
                  box.lo[2] + i % box.n[2]};
  }

  // The ghosts (off-rank nodes some row of mine has as a column), in the
  // halo's order: by owner in rank order, each owner's in its row order.
  // f(owner, node). The relation is symmetric, so m is a ghost when row m
  // has a column in my box.
  template <class F>
  void for_each_ghost(const Mesh& mesh, F&& f) const {
    std::map<int, std::vector<Index3>> by_owner;
    for (std::int64_t x = box.lo[0] - 1; x <= box.lo[0] + box.n[0]; ++x)
      for (std::int64_t y = box.lo[1] - 1; y <= box.lo[1] + box.n[1]; ++y)
        for (std::int64_t z = box.lo[2] - 1; z <= box.lo[2] + box.n[2]; ++z) {
          const Index3 m{x, y, z};
          if (!mesh.inside(m) || box.contains(m)) continue;
          bool coupled = false;
          mesh.for_each_column(m, [&](const Index3& c) { coupled = coupled || box.contains(c); });
          if (coupled) by_owner[decomp.owner(m)].push_back(m);
        }
    for (const auto& [q, ms] : by_owner)
      for (const auto& m : ms) f(q, m);
  }
};

inline Problem::Problem(const Params& p, int rank, int nranks) {
  const Mesh mesh(p);
  decomp = Decomp3(nranks, mesh.nodes());
  box = decomp.box(rank);
  n_own = box.volume();
  for_each_ghost(mesh, [&](int, const Index3&) { ++n_ghost; });
}

// Row g's entry in column m: the element matrices of the elements around g
// (those inside the mesh) that also hold m, summed in a fixed order.
inline double element_sum(const Mesh& mesh, const ElementMatrix& ke, const Index3& g, const Index3& m) {
  double a = 0.0;
  for (int e = 0; e < 8; ++e) {
    const Index3 lo{g[0] - 1 + (e & 1), g[1] - 1 + ((e >> 1) & 1), g[2] - 1 + ((e >> 2) & 1)};
    int ia = 0, ib = 0;
    bool inside = true;
    for (int d = 0; d < 3 && inside; ++d) {
      const std::int64_t oa = g[d] - lo[d], ob = m[d] - lo[d];
      inside = ob >= 0 && ob <= 1 && lo[d] >= 0 && lo[d] + 1 < mesh.nodes()[d];
      if (!inside) break;  // ob may be -1: no shift of it (UBSan)
      ia |= static_cast<int>(oa) << d;
      ib |= static_cast<int>(ob) << d;
    }
    if (inside) a += ke[static_cast<std::size_t>(ia)][static_cast<std::size_t>(ib)];
  }
  return a;
}

// The column numbers of ghosts: a dense index over my box grown by one
// node (-1 where no ghost), and the halo's receive side (neighbours,
// recv_ptr) in the ghosts' order.
inline std::vector<int> Problem::number_ghosts(const Mesh& mesh, const Box& grown) {
  std::vector<int> ghost_col(static_cast<std::size_t>(grown.volume()), -1);
  neighbours.clear();
  recv_ptr.clear();
  int next = static_cast<int>(n_own);
  int last = -1;
  for_each_ghost(mesh, [&](int q, const Index3& m) {
    if (q != last) {
      neighbours.push_back(q);
      recv_ptr.push_back(next - n_own);
      last = q;
    }
    ghost_col[static_cast<std::size_t>(local_in(grown, m))] = next++;
  });
  recv_ptr.push_back(n_ghost);
  return ghost_col;
}

// Pass 1: the row lengths into `ptr` (row_ptr's host mirror), and which of
// my rows each neighbour needs (in row order) into send_ptr and send_idx.
inline void Problem::plan_rows(const Mesh& mesh, const Kokkos::View<std::int64_t*>::HostMirror& ptr) {
  std::map<int, std::vector<int>> sends;
  ptr(0) = 0;
  for (std::int64_t i = 0; i < n_own; ++i) {
    const Index3 g = node(i);
    std::int64_t len = 0;
    mesh.for_each_column(g, [&](const Index3& m) {
      ++len;
      if (box.contains(m)) return;
      auto& rows = sends[decomp.owner(m)];
      if (rows.empty() || rows.back() != static_cast<int>(i)) rows.push_back(static_cast<int>(i));
    });
    ptr(i + 1) = ptr(i) + len;
  }
  send_ptr.assign(1, 0);
  std::int64_t n_send = 0;
  for (int q : neighbours) send_ptr.push_back(n_send += static_cast<std::int64_t>(sends[q].size()));
  send_idx = Kokkos::View<int*>("minife_send_idx", static_cast<std::size_t>(n_send));
  auto idx = Kokkos::create_mirror_view(send_idx);
  std::size_t k = 0;
  for (int q : neighbours)
    for (int row : sends[q]) idx(k++) = row;
  Kokkos::deep_copy(send_idx, idx);
}

// Rows in two passes straight into their Views (counts, then entries), so
// the matrix exists once. unit: Dirichlet rows get the identity, interior
// rows sum the element matrices of the 8 elements around them in a fixed
// order. minife: every row sums the elements it touches, then miniFE's
// boundary conditions (Mesh::hot, Mesh::cold) zero the constrained rows
// (1 on the diagonal) and move the constrained columns to b.
inline double Problem::assemble(const Params& p) {
  const double t_structure = wtime();
  const Mesh mesh(p);
  Box grown = box;
  for (int d = 0; d < 3; ++d) {
    grown.lo[d] -= 1;
    grown.n[d] += 2;
  }
  const std::vector<int> ghost_col = number_ghosts(mesh, grown);
  row_ptr = Kokkos::View<std::int64_t*>("minife_row_ptr", static_cast<std::size_t>(n_own) + 1);
  auto ptr = Kokkos::create_mirror_view(row_ptr);
  plan_rows(mesh, ptr);
  const double structure_s = wtime() - t_structure;

  // Pass 2: the entries.
  const bool unit = p.problem == ProblemKind::unit;
  const std::array<double, 3> h =
      unit ? std::array<double, 3>{1.0, 1.0, 1.0}
           : std::array<double, 3>{1.0 / double(p.nx), 1.0 / double(p.ny), 1.0 / double(p.nz)};
  const auto ke = unit ? element_matrix(h) : element_matrix(h, kMinifeGaussPoint);
  const double source = h[0] * h[1] * h[2] / 8;  // per element and node: Q = 1 over the element, 8 nodes
  auto column = [&](const Index3& m) {
    return box.contains(m) ? static_cast<int>(local(m))
                           : ghost_col[static_cast<std::size_t>(local_in(grown, m))];
  };
  const auto nnz_all = static_cast<std::size_t>(ptr(n_own));
  col =
      Kokkos::View<int*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("minife_col")), nnz_all);
  val = Kokkos::View<double*>(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("minife_val")),
                              nnz_all);
  b = Vector("minife_b", static_cast<std::size_t>(n_own));
  auto hc = Kokkos::create_mirror_view(col);
  auto hv = Kokkos::create_mirror_view(val);
  auto hb = Kokkos::create_mirror_view(b);
  for (std::int64_t i = 0; i < n_own; ++i) {
    const Index3 g = node(i);
    std::int64_t k = ptr(i);
    const bool fixed_row = unit ? mesh.boundary(g) : mesh.hot(g) || mesh.cold(g);
    double rhs = 0.0;
    mesh.for_each_column(g, [&](const Index3& m) {
      double a = 0.0;
      if (unit) {
        a = fixed_row ? 1.0 : element_sum(mesh, ke, g, m);
      } else if (fixed_row) {
        a = m == g ? 1.0 : 0.0;
      } else {
        a = element_sum(mesh, ke, g, m);
        if (mesh.cold(m))
          a = 0.0;
        else if (mesh.hot(m)) {
          rhs -= a;  // u = 1 there
          a = 0.0;
        }
      }
      hc(static_cast<std::size_t>(k)) = column(m);
      hv(static_cast<std::size_t>(k)) = a;
      ++k;
    });
    if (unit) {
      hb(i) = fixed_row ? 0.0 : 1.0;  // 8 elements x (source 1 x volume 1 / 8 nodes)
    } else if (fixed_row) {
      hb(i) = mesh.hot(g) ? 1.0 : 0.0;
    } else {
      hb(i) = 8 * source + rhs;  // an interior node touches 8 elements
    }
  }
  Kokkos::deep_copy(row_ptr, ptr);
  Kokkos::deep_copy(col, hc);
  Kokkos::deep_copy(val, hv);
  Kokkos::deep_copy(b, hb);
  return structure_s;
}

// y = A x; x has n_own + n_ghost entries, its ghosts up to date.
inline void spmv(const Problem& a, const Vector& x, const Vector& y) {
  const auto ptr = a.row_ptr;
  const auto col = a.col;
  const auto val = a.val;
  Kokkos::parallel_for(
      "minife::spmv", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, a.n_own),
      KOKKOS_LAMBDA(const std::int64_t i) {
        double s = 0.0;
        for (std::int64_t k = ptr(i); k < ptr(i + 1); ++k) s += val(k) * x(col(k));
        y(i) = s;
      });
}

// Fill x's ghost entries from their owners.
template <class Comm>
class Halo {
 public:
  Halo() = default;
  explicit Halo(const Problem& a)
      : a_(&a),
        buf_("minife_halo_send", a.send_idx.extent(0)),
        ghosts_("minife_halo_recv", static_cast<std::size_t>(a.n_ghost)) {
    // MPI reads and writes host memory (this MPI is not CUDA-aware); on a
    // host backend the mirrors are the buffers themselves.
    buf_host_ = Kokkos::create_mirror_view(buf_);
    ghosts_host_ = Kokkos::create_mirror_view(ghosts_);
  }

  void exchange(const Comm& comm, const Vector& x) {
    const Problem& a = *a_;
    // Ghosts land straight in x where x is host memory, else in a mirror.
    const bool direct = Kokkos::SpaceAccessibility<Kokkos::HostSpace, Vector::memory_space>::accessible;
    double* ghosts = direct ? x.data() + a.n_own : ghosts_host_.data();
    std::vector<request_t<Comm>> reqs;
    reqs.reserve(2 * a.neighbours.size());
    for (std::size_t k = 0; k < a.neighbours.size(); ++k)
      reqs.push_back(comm.irecv(ghosts + a.recv_ptr[k],
                                static_cast<std::size_t>(a.recv_ptr[k + 1] - a.recv_ptr[k]), a.neighbours[k],
                                0));
    const auto idx = a.send_idx;
    const auto buf = buf_;
    const Kokkos::DefaultExecutionSpace space;  // the app's own instance (see fence_own)
    Kokkos::parallel_for(
        "minife::halo_pack", Kokkos::RangePolicy<>(space, 0, idx.extent(0)),
        KOKKOS_LAMBDA(const std::size_t k) { buf(k) = x(idx(k)); });
    if (buf_host_.data() != buf_.data()) Kokkos::deep_copy(space, buf_host_, buf_);
    space.fence();
    for (std::size_t k = 0; k < a.neighbours.size(); ++k)
      reqs.push_back(comm.isend(buf_host_.data() + a.send_ptr[k],
                                static_cast<std::size_t>(a.send_ptr[k + 1] - a.send_ptr[k]), a.neighbours[k],
                                0));
    comm.wait_all(reqs);
    if (!direct && a.n_ghost > 0) {
      const auto range = std::pair<std::int64_t, std::int64_t>(a.n_own, a.n_own + a.n_ghost);
      Kokkos::deep_copy(space, Kokkos::subview(x, range), ghosts_host_);
      space.fence();
    }
  }

 private:
  const Problem* a_ = nullptr;
  Vector buf_, ghosts_;
  Vector::HostMirror buf_host_, ghosts_host_;
};

// sum_i x(i) y(i) over the owned entries, in a fixed order, then across
// ranks in rank order.
template <class Comm>
double dot(const Comm& comm, std::int64_t n, const Vector& x, const Vector& y) {
  const double local = ordered_sum(
      n, KOKKOS_LAMBDA(const std::int64_t i) { return x(i) * y(i); });
  return ordered_allreduce_sum(comm, local);
}

// miniFE's analytic solution of the minife problem (Carslaw & Jaeger,
// 6.2, eqs. 9 and 10; the series as miniFE sums it, terms that overflow
// dropped) and its verify_solution: the largest |x - u| over the nodes
// within 0.05 of (0.5, 0.5, 0.5), passed at 0.06 or less.
inline double analytic_solution(double x, double y, double z, int terms = 300) {
  const double pi = 3.141592653589793238462;
  double sum = 0;
  for (int p = 0; p <= terms; ++p) {
    const double sin_py = std::sin((2 * p + 1) * pi * y) / (2 * p + 1);
    for (int q = 0; q <= terms; ++q) {
      const double sin_qz = std::sin((2 * q + 1) * pi * z) / (2 * q + 1);
      const double l = std::sqrt((2 * p + 1) * (2 * p + 1) * pi * pi + (2 * q + 1) * (2 * q + 1) * pi * pi);
      const double t = (std::sinh(l * x) * sin_py) * (sin_qz / std::sinh(l));
      if (t != t) break;  // NaN: sinh overflowed
      sum += t;
    }
  }
  return 16.0 / (pi * pi) * sum;
}

struct Verification {
  double max_error = 0;
  bool passed = true;
};

template <class Comm>
Verification verify_solution(const Comm& comm, const Problem& a, const Params& p, const Vector& x) {
  const Mesh mesh(p);
  auto hx = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), x);
  double err = 0;
  for (std::int64_t i = 0; i < a.n_own; ++i) {
    const Index3 g = a.node(i);
    const double c[3] = {double(g[0]) / double(p.nx), double(g[1]) / double(p.ny),
                         double(g[2]) / double(p.nz)};
    if (std::abs(c[0] - 0.5) >= 0.05 || std::abs(c[1] - 0.5) >= 0.05 || std::abs(c[2] - 0.5) >= 0.05)
      continue;
    const double u = mesh.hot(g) ? 1.0 : mesh.cold(g) ? 0.0 : analytic_solution(c[0], c[1], c[2]);
    err = std::max(err, std::abs(u - hx(i)));
  }
  Verification v;
  for (double e : comm.gather(err, 0)) v.max_error = std::max(v.max_error, e);
  comm.bcast(&v.max_error, 1, 0);
  v.passed = v.max_error <= 0.06;
  return v;
}

// Wall time per kernel as miniFE counts it (matvec includes its halo
// exchange, dot its reduction), and its flop counts.
struct KernelTimes {
  double dot = 0, waxpby = 0, matvec = 0;
  double halo = 0;  // the part of matvec spent in the halo exchange
};

// Unpreconditioned CG, one iteration per step(). The state that defines a
// run at an iteration: x, r, p (owned part), rr = r.r, ||b||, iteration
// and the start time; A and b are assembled (or restored as static store
// members). (||b|| is state because computing it is collective: a
// recruited spare must not reduce alone while the survivors resume.)
template <class Comm>
class Cg {
 public:
  using Log = std::function<void(const std::string&)>;

  const Params& params() const { return p_; }
  // The shape only: assemble() (or a static restore) fills the matrix.
  Cg(const Params& p, int rank, int nranks, Log log = {}) : p_(p), log_(std::move(log)) {
    a_ = Problem(p, rank, nranks);
    const auto n = static_cast<std::size_t>(a_.n_own);
    const auto v = staggered_vectors("minife_vectors", {n, n, n + static_cast<std::size_t>(a_.n_ghost), n});
    x_ = v[0];
    r_ = v[1];
    p_vec_ = v[2];
    ap_ = v[3];
  }

  // The matrix, unless it is there already (a restore brought it), and the
  // halo built on it. Not collective.
  void assemble() {
    if (!a_.assembled()) {
      const double t = wtime();
      structure_seconds_ = a_.assemble(p_);
      assembly_seconds_ = wtime() - t - structure_seconds_;
    }
    if (!halo_ready_) halo_ = Halo<Comm>(a_);
    halo_ready_ = true;
  }

  // x = 0, r = p = b. Collective.
  void initialize(const Comm& comm) {
    assemble();
    Kokkos::deep_copy(x_, 0.0);
    Kokkos::deep_copy(r_, a_.b);
    Kokkos::deep_copy(owned(p_vec_), a_.b);
    rr_ = dot(comm, a_.n_own, r_, r_);
    norm_b_ = std::sqrt(dot(comm, a_.n_own, a_.b, a_.b));
    iteration_ = 0;
    solve_start_ = wtime();
  }

  // One CG iteration (collective). True when converged or out of iterations.
  bool step(const Comm& comm) {
    timer_.tick();
    assemble();                       // a recruited rank whose rows no restore brought
    if (norm_b_ == 0.0) return true;  // b = 0 (no interior node): x = 0 is exact
    if (on_halo_) on_halo_();
    rr_top_ = rr_;  // ||r_{k-1}||^2: what miniFE tests at the top of iteration k
    double t = wtime();
    halo_.exchange(comm, p_vec_);
    times_.halo += wtime() - t;
    spmv(a_, p_vec_, ap_);
    fence_own();
    t = lap(times_.matvec, t);
    const double alpha = rr_ / dot(comm, a_.n_own, p_vec_, ap_);
    t = lap(times_.dot, t);
    const auto x = x_, r = r_, p = p_vec_, ap = ap_;
    Kokkos::parallel_for(
        "minife::axpy", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, a_.n_own),
        KOKKOS_LAMBDA(const std::int64_t i) {
          x(i) += alpha * p(i);
          r(i) -= alpha * ap(i);
        });
    fence_own();
    t = lap(times_.waxpby, t);
    const double rr_new = dot(comm, a_.n_own, r_, r_);
    t = lap(times_.dot, t);
    const double beta = rr_new / rr_;
    Kokkos::parallel_for(
        "minife::update_p", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, a_.n_own),
        KOKKOS_LAMBDA(const std::int64_t i) { p(i) = r(i) + beta * p(i); });
    fence_own();
    lap(times_.waxpby, t);
    rr_ = rr_new;
    ++iteration_;
    const double rel = std::sqrt(rr_) / norm_b_;
    if (log_ && p_.progress_every > 0 && iteration_ % p_.progress_every == 0)
      log_(progress_line(iteration_, p_.iteration_limit(), wtime() - solve_start_, rel));
    // minife: miniFE's rule, an absolute residual of machine epsilon, tested
    // as miniFE does at the top of each iteration, on the residual before
    // it: the iteration after the one that reached epsilon is still done.
    const bool converged = p_.problem == ProblemKind::minife
                               ? std::sqrt(rr_top_) <= std::numeric_limits<double>::epsilon()
                               : rel <= p_.tolerance;
    return converged || iteration_ >= p_.iteration_limit();
  }

  // The answer (collective; complete on rank 0): iterations, the true
  // relative residual ||b - A x|| / ||b||, ||x||; for minife also miniFE's
  // verification, per-kernel times and Mflops, and its YAML summary.
  Results results(const Comm& comm) {
    const double solve = wtime() - solve_start_;
    Vector w("minife_w", p_vec_.extent(0));
    Kokkos::deep_copy(owned(w), x_);
    halo_.exchange(comm, w);
    spmv(a_, w, ap_);
    const auto b = a_.b, ax = ap_;
    const double local_res = ordered_sum(
        a_.n_own, KOKKOS_LAMBDA(const std::int64_t i) { return (b(i) - ax(i)) * (b(i) - ax(i)); });
    const double res = norm_b_ > 0 ? std::sqrt(ordered_allreduce_sum(comm, local_res)) / norm_b_ : 0.0;
    const double rows = ordered_allreduce_sum(comm, double(a_.n_own));
    const double nnz = ordered_allreduce_sum(comm, double(a_.nnz()));
    Results out;
    out.add("iterations", iteration_);
    out.add("residual", res);
    out.add("solution_norm", std::sqrt(dot(comm, a_.n_own, x_, x_)));
    out.add("rows", rows);
    out.add("nonzeros", nnz);
    out.add_timing("assembly_s", assembly_seconds_);
    out.add_timing("solve_s", solve);
    out.add_timing("iteration_median_s", timer_.percentile(0.5));
    out.add_timing("iteration_p10_s", timer_.percentile(0.1));
    out.add_timing("matvec_s", times_.matvec);
    out.add_timing("halo_s", times_.halo);
    out.add_timing("dot_s", times_.dot);
    out.add_timing("waxpby_s", times_.waxpby);
    if (p_.problem == ProblemKind::minife) minife_results(comm, out, solve, rows, nnz);
    return out;
  }

  void on_halo(std::function<void()> hook) { on_halo_ = std::move(hook); }

  // Checkpointed state.
  const Vector& x() const { return x_; }
  const Vector& r() const { return r_; }
  auto p_owned() const { return owned(p_vec_); }
  double& rr() { return rr_; }
  double& norm_b() { return norm_b_; }
  std::int64_t& iteration() { return iteration_; }
  double& solve_start() { return solve_start_; }
  const Problem& problem() const { return a_; }
  Problem& problem() { return a_; }

 private:
  auto owned(const Vector& v) const {
    return Kokkos::subview(v, std::pair<std::int64_t, std::int64_t>(0, a_.n_own));
  }
  static double lap(double& acc, double since) {
    const double t = wtime();
    acc += t - since;
    return t;
  }
  void minife_results(const Comm& comm, Results& out, double solve, double node_rows, double nnz);

  Params p_;
  Log log_;
  Problem a_;
  Halo<Comm> halo_;
  bool halo_ready_ = false;
  Vector x_, r_, p_vec_, ap_;
  double rr_ = 0.0, norm_b_ = -1.0;
  double rr_top_ = -1.0;  // rr_ when the last step() began (not state: the summary's, -1 before a step)
  std::int64_t iteration_ = 0;
  double solve_start_ = 0.0, assembly_seconds_ = 0.0, structure_seconds_ = 0.0;
  std::function<void()> on_halo_;
  IterationTimer timer_;
  KernelTimes times_;
};

// miniFE's figures. Flops as miniFE counts them (its global row count is
// nx*ny*nz, elements not nodes; a CG solve of k iterations is k + 1
// matvecs, 2k dots and 3k + 2 waxpbys), times rank 0's.
template <class Comm>
void Cg<Comm>::minife_results(const Comm& comm, Results& out, double solve, double node_rows, double nnz) {
  const Verification v = p_.verify_solution ? verify_solution(comm, a_, p_, x_) : Verification{};
  if (p_.verify_solution) {
    out.add("verify_max_error", v.max_error);
    out.add("verify_solution", std::string(v.passed ? "passed" : "failed"));
  }
  const double k = double(iteration_), rows = double(p_.nx) * double(p_.ny) * double(p_.nz);
  const double flops[3] = {2 * rows * 2 * k, 3 * rows * (3 * k + 2), 2 * nnz * (k + 1)};
  const double secs[3] = {times_.dot, times_.waxpby, times_.matvec};
  const char* names[3] = {"dot", "waxpby", "matvec"};
  for (int i = 0; i < 3; ++i)
    out.add_timing(std::string(names[i]) + "_mflops", secs[i] > 1e-4 ? 1e-6 * flops[i] / secs[i] : -1);
  const auto rss = comm.gather(peak_rss_kb(), 0);
  const auto own = comm.gather(a_.n_own, 0);
  const auto nnzs = comm.gather(a_.nnz(), 0);
  // The CSR arrays and the halo plan, as miniFE's Global Memory and Pll
  // Memory Overhead count its own (compute_matrix_stats.hpp).
  const double halo_plan = double(a_.send_idx.extent(0) * sizeof(int) + a_.neighbours.size() * sizeof(int) +
                                  (a_.send_ptr.size() + a_.recv_ptr.size()) * sizeof(std::int64_t));
  const double matrix = double(a_.row_ptr.extent(0) * sizeof(std::int64_t)) +
                        double(a_.nnz()) * double(sizeof(int) + sizeof(double));
  const auto bytes = ordered_allreduce_sum<Comm, 2>(comm, {matrix, halo_plan});
  if (comm.rank() != 0) return;
  std::int64_t rss_sum = 0, rss_max = 0;
  for (auto x : rss) {
    rss_sum += x;
    rss_max = std::max(rss_max, x);
  }
  out.add_timing("peak_rss_max_kb", double(rss_max));
  if (!p_.summary) return;
  MinifeSummary s;
  s.nx = p_.nx;
  s.ny = p_.ny;
  s.nz = p_.nz;
  s.ranks = comm.size();
  s.global_rows = node_rows;
  s.global_nnz = nnz;
  s.rows_per_rank = own;
  s.nnz_per_rank = nnzs;
  s.matrix_bytes = bytes[0];
  s.halo_plan_bytes = bytes[1];
  s.structure_s = structure_seconds_;
  s.assembly_s = assembly_seconds_;
  s.iterations = iteration_;
  s.final_resid = std::sqrt(rr_top_ >= 0 ? rr_top_ : rr_);  // miniFE's: ||r|| before the last update
  s.secs = {secs[0], secs[1], secs[2]};
  s.flops = {flops[0], flops[1], flops[2]};
  s.total_s = solve;
  s.rss_sum_kb = rss_sum;
  s.rss_max_kb = rss_max;
  s.write();
}

}  // namespace miniapps::minife
