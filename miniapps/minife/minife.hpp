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

#include <Kokkos_Core.hpp>

#include <array>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

namespace miniapps::minife {

struct Params {
  std::int64_t nx = 20, ny = 20, nz = 20;  // elements per dimension
  std::int64_t max_iterations = 500;       // CG iterations at most
  std::int64_t progress_every = 20;        // progress line every k iterations (0: off)
  double tolerance = 1e-8;                 // stop at ||r|| / ||b|| <= tolerance
  bool abft = false;                       // fx app: each iteration a checked TryBlock (minife.cpp)

  ParamSet declare() {
    ParamSet s("minife");
    s.add("nx", nx, "elements in x (2 or more, for an interior node)", 2)
        .add("ny", ny, "elements in y (2 or more)", 2)
        .add("nz", nz, "elements in z (2 or more)", 2)
        .add("max_iterations", max_iterations, "CG iterations at most", 1)
        .add("progress_every", progress_every, "print progress every k iterations (0: never)", 0)
        .add("tolerance", tolerance, "relative residual ||r||/||b|| to stop at", 0.0, true)
        .add("abft", abft,
             "fx app: run each CG iteration in a TryBlock that checks the CG state for corruption and retries "
             "(the baseline ignores it)");
    return s;
  }
  void check(const ParamSet& set, int nranks) const {
    if (dims_create(nranks, {nx + 1, ny + 1, nz + 1})[0] == 0)
      set.fail("nx", "a mesh of " + std::to_string(nx + 1) + "x" + std::to_string(ny + 1) + "x" +
                         std::to_string(nz + 1) + " nodes cannot be split over " + std::to_string(nranks) +
                         " ranks with at least one node per rank and dimension");
  }
};

using Vector = Kokkos::View<double*>;

// The local rows of A and b, and the plan of the halo exchange.
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

  Problem() = default;
  Problem(const Params& p, int rank, int nranks);
};

// Element stiffness matrix of -laplace on the unit cube with trilinear
// shape functions; node a = ax + 2 ay + 4 az. 2-point Gauss is exact here.
inline std::array<std::array<double, 8>, 8> element_matrix() {
  const double g[2] = {0.5 - 0.5 / std::sqrt(3.0), 0.5 + 0.5 / std::sqrt(3.0)};
  std::array<std::array<double, 8>, 8> ke{};
  for (int q = 0; q < 8; ++q) {
    const double xi[3] = {g[q & 1], g[(q >> 1) & 1], g[(q >> 2) & 1]};  // weights are 1/8
    double grad[8][3];
    for (int a = 0; a < 8; ++a) {
      const int bit[3] = {a & 1, (a >> 1) & 1, (a >> 2) & 1};
      double n1[3], d1[3];
      for (int d = 0; d < 3; ++d) {
        n1[d] = bit[d] ? xi[d] : 1.0 - xi[d];
        d1[d] = bit[d] ? 1.0 : -1.0;
      }
      grad[a][0] = d1[0] * n1[1] * n1[2];
      grad[a][1] = n1[0] * d1[1] * n1[2];
      grad[a][2] = n1[0] * n1[1] * d1[2];
    }
    for (int a = 0; a < 8; ++a)
      for (int b = 0; b < 8; ++b)
        ke[a][b] += 0.125 * (grad[a][0] * grad[b][0] + grad[a][1] * grad[b][1] + grad[a][2] * grad[b][2]);
  }
  return ke;
}

inline Problem::Problem(const Params& p, int rank, int nranks) {
  const Index3 nodes{p.nx + 1, p.ny + 1, p.nz + 1};
  decomp = Decomp3(nranks, nodes);
  box = decomp.box(rank);
  n_own = box.volume();
  // Global node ids numbered rank by rank, so a rank's rows are contiguous.
  std::vector<std::int64_t> offset(static_cast<std::size_t>(nranks) + 1, 0);
  for (int q = 0; q < nranks; ++q) offset[q + 1] = offset[q] + decomp.box(q).volume();
  auto local_in = [](const Box& bx, const Index3& g) {
    return ((g[0] - bx.lo[0]) * bx.n[1] + (g[1] - bx.lo[1])) * bx.n[2] + (g[2] - bx.lo[2]);
  };
  auto boundary = [&](const Index3& g) {
    for (int d = 0; d < 3; ++d)
      if (g[d] == 0 || g[d] == nodes[d] - 1) return true;
    return false;
  };
  auto node_of_row = [&](std::int64_t i) {
    return Index3{box.lo[0] + i / (box.n[1] * box.n[2]), box.lo[1] + (i / box.n[2]) % box.n[1],
                  box.lo[2] + i % box.n[2]};
  };
  // The interior neighbours (27-point, in a fixed order) of an interior node.
  auto for_each_neighbour = [&](const Index3& g, auto&& f) {
    for (int dx = -1; dx <= 1; ++dx)
      for (int dy = -1; dy <= 1; ++dy)
        for (int dz = -1; dz <= 1; ++dz) {
          const Index3 m{g[0] + dx, g[1] + dy, g[2] + dz};
          if (!boundary(m)) f(m);
        }
  };

  // Ghosts: off-rank columns, grouped by owner in rank order, each group
  // in global id order; the owner derives the same order for its sends.
  std::map<std::pair<int, std::int64_t>, int> ghosts;          // (owner, gid) -> local column
  std::map<int, std::map<std::int64_t, int>> sends;            // owner -> gid -> my row
  for (std::int64_t i = 0; i < n_own; ++i) {
    const Index3 g = node_of_row(i);
    if (boundary(g)) continue;
    for_each_neighbour(g, [&](const Index3& m) {
      if (box.contains(m)) return;
      const int q = decomp.owner(m);
      ghosts.emplace(std::make_pair(q, offset[q] + local_in(decomp.box(q), m)), 0);
      sends[q].emplace(offset[rank] + i, static_cast<int>(i));  // symmetric: q needs my node i
    });
  }
  n_ghost = static_cast<std::int64_t>(ghosts.size());
  {
    int next = static_cast<int>(n_own);
    int last_owner = -1;
    for (auto& [key, local] : ghosts) {
      local = next++;
      if (key.first != last_owner) {
        neighbours.push_back(key.first);
        recv_ptr.push_back(local - n_own);
        last_owner = key.first;
      }
    }
    recv_ptr.push_back(n_ghost);
  }
  std::vector<int> send_rows;
  send_ptr.push_back(0);
  for (int q : neighbours) {
    for (const auto& [gid, row] : sends[q]) send_rows.push_back(row);
    send_ptr.push_back(static_cast<std::int64_t>(send_rows.size()));
  }

  // Rows: Dirichlet nodes get the identity; interior nodes sum the element
  // matrices of the (up to 8) elements around them, element by element in
  // a fixed order. Columns of Dirichlet nodes (u = 0) drop out, keeping A
  // symmetric positive definite.
  const auto ke = element_matrix();
  std::vector<std::int64_t> ptr{0};
  std::vector<int> cols;
  std::vector<double> vals, rhs(static_cast<std::size_t>(n_own), 0.0);
  for (std::int64_t i = 0; i < n_own; ++i) {
    const Index3 g = node_of_row(i);
    if (boundary(g)) {
      cols.push_back(static_cast<int>(i));
      vals.push_back(1.0);
    } else {
      for_each_neighbour(g, [&](const Index3& m) {
        double a = 0.0;
        for (int e = 0; e < 8; ++e) {
          const Index3 lo{g[0] - 1 + (e & 1), g[1] - 1 + ((e >> 1) & 1), g[2] - 1 + ((e >> 2) & 1)};
          int ia = 0, ib = 0;
          bool inside = true;
          for (int d = 0; d < 3 && inside; ++d) {
            const std::int64_t oa = g[d] - lo[d], ob = m[d] - lo[d];
            inside = ob >= 0 && ob <= 1;
            ia |= static_cast<int>(oa) << d;
            ib |= static_cast<int>(ob) << d;
          }
          if (inside) a += ke[static_cast<std::size_t>(ia)][static_cast<std::size_t>(ib)];
        }
        const int c = box.contains(m) ? static_cast<int>(local_in(box, m))
                                      : ghosts.at({decomp.owner(m), offset[decomp.owner(m)] +
                                                                        local_in(decomp.box(decomp.owner(m)), m)});
        cols.push_back(c);
        vals.push_back(a);
      });
      rhs[static_cast<std::size_t>(i)] = 1.0;  // 8 elements x (source 1 x volume 1 / 8 nodes)
    }
    ptr.push_back(static_cast<std::int64_t>(cols.size()));
  }

  auto to_view = [](const auto& v, const char* label) {
    using T = typename std::decay_t<decltype(v)>::value_type;
    Kokkos::View<T*> out(std::string(label), v.size());
    auto h = Kokkos::create_mirror_view(out);
    for (std::size_t k = 0; k < v.size(); ++k) h(k) = v[k];
    Kokkos::deep_copy(out, h);
    return out;
  };
  row_ptr = to_view(ptr, "minife_row_ptr");
  col = to_view(cols, "minife_col");
  val = to_view(vals, "minife_val");
  b = to_view(rhs, "minife_b");
  send_idx = to_view(send_rows, "minife_send_idx");
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
  explicit Halo(const Problem& a) : a_(&a), buf_("minife_halo_send", a.send_idx.extent(0)) {}

  void exchange(const Comm& comm, const Vector& x) {
    const Problem& a = *a_;
    std::vector<request_t<Comm>> reqs;
    reqs.reserve(2 * a.neighbours.size());
    for (std::size_t k = 0; k < a.neighbours.size(); ++k)
      reqs.push_back(comm.irecv(x.data() + a.n_own + a.recv_ptr[k],
                                static_cast<std::size_t>(a.recv_ptr[k + 1] - a.recv_ptr[k]), a.neighbours[k], 0));
    const auto idx = a.send_idx;
    const auto buf = buf_;
    Kokkos::parallel_for(
        "minife::halo_pack", Kokkos::RangePolicy<>(0, idx.extent(0)),
        KOKKOS_LAMBDA(const std::size_t k) { buf(k) = x(idx(k)); });
    Kokkos::fence();
    for (std::size_t k = 0; k < a.neighbours.size(); ++k)
      reqs.push_back(comm.isend(buf_.data() + a.send_ptr[k],
                                static_cast<std::size_t>(a.send_ptr[k + 1] - a.send_ptr[k]), a.neighbours[k], 0));
    comm.wait_all(reqs);
  }

 private:
  const Problem* a_ = nullptr;
  Vector buf_;
};

// sum_i x(i) y(i) over the owned entries, in a fixed order, then across
// ranks in rank order.
template <class Comm>
double dot(const Comm& comm, std::int64_t n, const Vector& x, const Vector& y) {
  const double local = ordered_sum(n, KOKKOS_LAMBDA(const std::int64_t i) { return x(i) * y(i); });
  return ordered_allreduce_sum(comm, local);
}

// Unpreconditioned CG, one iteration per step(). The state that defines a
// run at an iteration: x, r, p (owned part), rr = r.r, ||b||, iteration
// and the start time; A and b are rebuilt by the constructor. (||b|| is
// state because computing it is collective: a recruited spare must not
// reduce alone while the survivors resume.)
template <class Comm>
class Cg {
 public:
  using Log = std::function<void(const std::string&)>;

  Cg(const Params& p, int rank, int nranks, Log log = {}) : p_(p), log_(std::move(log)) {
    const double t = wtime();
    a_ = Problem(p, rank, nranks);
    assembly_seconds_ = wtime() - t;
    halo_ = Halo<Comm>(a_);
    const auto n = static_cast<std::size_t>(a_.n_own);
    x_ = Vector("minife_x", n);
    r_ = Vector("minife_r", n);
    p_vec_ = Vector("minife_p", n + static_cast<std::size_t>(a_.n_ghost));
    ap_ = Vector("minife_Ap", n);
  }

  // x = 0, r = p = b. Collective.
  void initialize(const Comm& comm) {
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
    if (norm_b_ == 0.0) return true;  // b = 0 (no interior node): x = 0 is exact
    if (on_halo_) on_halo_();
    halo_.exchange(comm, p_vec_);
    spmv(a_, p_vec_, ap_);
    const double alpha = rr_ / dot(comm, a_.n_own, p_vec_, ap_);
    const auto x = x_, r = r_, p = p_vec_, ap = ap_;
    Kokkos::parallel_for(
        "minife::axpy", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, a_.n_own),
        KOKKOS_LAMBDA(const std::int64_t i) {
          x(i) += alpha * p(i);
          r(i) -= alpha * ap(i);
        });
    const double rr_new = dot(comm, a_.n_own, r_, r_);
    const double beta = rr_new / rr_;
    Kokkos::parallel_for(
        "minife::update_p", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, a_.n_own),
        KOKKOS_LAMBDA(const std::int64_t i) { p(i) = r(i) + beta * p(i); });
    rr_ = rr_new;
    ++iteration_;
    const double rel = std::sqrt(rr_) / norm_b_;
    if (log_ && p_.progress_every > 0 && iteration_ % p_.progress_every == 0)
      log_(progress_line(iteration_, p_.max_iterations, wtime() - solve_start_, rel));
    return rel <= p_.tolerance || iteration_ >= p_.max_iterations;
  }

  // The answer (collective; complete on rank 0): iterations, the true
  // relative residual ||b - A x|| / ||b||, ||x||.
  Results results(const Comm& comm) {
    const double solve = wtime() - solve_start_;
    Vector w("minife_w", p_vec_.extent(0));
    Kokkos::deep_copy(owned(w), x_);
    halo_.exchange(comm, w);
    spmv(a_, w, ap_);
    const auto b = a_.b, ax = ap_;
    const double local_res =
        ordered_sum(a_.n_own, KOKKOS_LAMBDA(const std::int64_t i) { return (b(i) - ax(i)) * (b(i) - ax(i)); });
    const double res = norm_b_ > 0 ? std::sqrt(ordered_allreduce_sum(comm, local_res)) / norm_b_ : 0.0;
    Results out;
    out.add("iterations", iteration_);
    out.add("residual", res);
    out.add("solution_norm", std::sqrt(dot(comm, a_.n_own, x_, x_)));
    out.add("rows", ordered_allreduce_sum(comm, double(a_.n_own)));
    out.add("nonzeros", ordered_allreduce_sum(comm, double(a_.nnz())));
    out.add_timing("assembly_s", assembly_seconds_);
    out.add_timing("solve_s", solve);
    out.add_timing("iteration_median_s", timer_.percentile(0.5));
    out.add_timing("iteration_p10_s", timer_.percentile(0.1));
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

 private:
  auto owned(const Vector& v) const { return Kokkos::subview(v, std::pair<std::int64_t, std::int64_t>(0, a_.n_own)); }

  Params p_;
  Log log_;
  Problem a_;
  Halo<Comm> halo_;
  Vector x_, r_, p_vec_, ap_;
  double rr_ = 0.0, norm_b_ = -1.0;
  std::int64_t iteration_ = 0;
  double solve_start_ = 0.0, assembly_seconds_ = 0.0;
  std::function<void()> on_halo_;
  IterationTimer timer_;
};

}  // namespace miniapps::minife
