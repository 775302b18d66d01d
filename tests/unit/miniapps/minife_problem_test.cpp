// The minife mini-app's problems, assembled rank block by rank block
// without MPI: miniFE's nonzero counts (the full 27-point structure), the
// shape known before assembly, and miniFE's boundary conditions.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include "minife.hpp"
#include "packed_rows.hpp"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <utility>
#include <vector>

namespace {

using miniapps::minife::Params;
using miniapps::minife::Problem;
using miniapps::minife::ProblemKind;

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
[[maybe_unused]] auto* const kokkos_env = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

Params cube(ProblemKind kind, std::int64_t n) {
  Params p;
  p.problem = kind;
  p.nx = p.ny = p.nz = n;
  return p;
}

// Global rows and nonzeros over `ranks` blocks; each block's ghost count
// (known before assembly) must match what assembly found.
std::pair<std::int64_t, std::int64_t> totals(const Params& p, int ranks) {
  std::int64_t rows = 0, nnz = 0;
  for (int r = 0; r < ranks; ++r) {
    Problem a(p, r, ranks);
    const std::int64_t ghosts = a.n_ghost;
    EXPECT_FALSE(a.assembled());
    a.assemble(p);
    EXPECT_TRUE(a.assembled());
    EXPECT_EQ(a.n_ghost, ghosts);
    EXPECT_EQ(a.recv_ptr.back(), ghosts);
    rows += a.n_own;
    nnz += a.nnz();
  }
  return {rows, nnz};
}

TEST(MinifeProblem, NonzerosAreMiniFEs) {
  EXPECT_EQ(totals(cube(ProblemKind::minife, 32), 1),
            std::make_pair(std::int64_t{35937}, std::int64_t{912673}));
  EXPECT_EQ(totals(cube(ProblemKind::minife, 32), 4).second, 912673);
  EXPECT_EQ(totals(cube(ProblemKind::minife, 64), 4),
            std::make_pair(std::int64_t{274625}, std::int64_t{7189057}));
}

TEST(MinifeProblem, UnitKeepsItsStructure) {
  // Boundary rows: the diagonal only; interior rows: interior columns only.
  EXPECT_EQ(totals(cube(ProblemKind::unit, 20), 4), std::make_pair(std::int64_t{9261}, std::int64_t{168777}));
}

template <class V>
using Mirror = decltype(Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), std::declval<V>()));

// Problem minife on an n^3 cube, one rank, its matrix and b on the host.
struct Assembled {
  explicit Assembled(int n) : p(cube(ProblemKind::minife, n)), a(p, 0, 1) {
    a.assemble(p);
    ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.row_ptr);
    val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.val);
    col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.col);
    b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.b);
  }
  Params p;
  Problem a;
  Mirror<decltype(Problem::row_ptr)> ptr;
  Mirror<decltype(Problem::val)> val;
  Mirror<decltype(Problem::col)> col;
  Mirror<decltype(Problem::b)> b;
};

TEST(MinifeProblem, BoundaryConditionsAreMiniFEs) {
  const Assembled m(4);
  const auto& [p, a, ptr, val, col, b] = m;
  for (std::int64_t i = 0; i < a.n_own; ++i) {
    const auto g = a.node(i);
    const bool hot = g[0] == 4,
               cold = !hot && (g[0] == 0 || g[1] == 0 || g[2] == 0 || g[1] == 4 || g[2] == 4);
    if (hot || cold) {
      EXPECT_EQ(b(i), hot ? 1.0 : 0.0);
      for (auto k = ptr(i); k < ptr(i + 1); ++k) EXPECT_EQ(val(k), col(k) == i ? 1.0 : 0.0);
    }
  }
  // Interior node next to the x = 1 face: b = source - (coupling to the face).
  const auto ke = miniapps::minife::element_matrix({0.25, 0.25, 0.25}, miniapps::minife::kMinifeGaussPoint);
  double diag = 0;
  for (int e = 0; e < 8; ++e) diag += ke[static_cast<std::size_t>(e)][static_cast<std::size_t>(e)];
  const std::int64_t i = a.local({3, 2, 2});
  for (auto k = ptr(i); k < ptr(i + 1); ++k)
    if (col(k) == i) {
      EXPECT_NEAR(val(k), diag, 1e-15);
    }
  EXPECT_GT(b(i), 0.25 * 0.25 * 0.25);  // the face (u = 1) pulls the source up
}

// miniFE's own values (its A and b dumped after the boundary conditions,
// 8^3, row of node (5, 5, 5)): its truncated Gauss abscissa makes the
// diagonal 1/3 h - 1.1e-10 and the face neighbours 2.7e-11 instead of 0.
TEST(MinifeProblem, EntriesAreMiniFEsToRounding) {
  const Assembled m(8);
  const auto& [p, a, ptr, val, col, b] = m;
  const std::int64_t i = a.local({5, 5, 5});
  const std::map<std::int64_t, double> minife = {{i, 0.33333333322385283},
                                                 {a.local({4, 5, 5}), 2.7370160743953389e-11},
                                                 {a.local({5, 4, 5}), 2.7370159117650131e-11},
                                                 {a.local({5, 5, 4}), 2.7370131280759352e-11}};
  int found = 0;
  for (auto k = ptr(i); k < ptr(i + 1); ++k) {
    const auto it = minife.find(col(k));
    if (it == minife.end()) continue;
    EXPECT_NEAR(val(k), it->second, 1e-15) << "column " << col(k);
    ++found;
  }
  EXPECT_EQ(found, 4);
  EXPECT_NEAR(b(i), 0.0019531249999999991, 1e-17);
}

TEST(MinifeProblem, AnalyticSolutionHasMiniFEsBoundaryValues) {
  EXPECT_NEAR(miniapps::minife::analytic_solution(0.0, 0.5, 0.5), 0.0, 1e-12);
  EXPECT_NEAR(miniapps::minife::analytic_solution(0.999, 0.5, 0.5), 1.0, 0.05);
  // At the centre, by symmetry (six faces, one hot): 1/6.
  EXPECT_NEAR(miniapps::minife::analytic_solution(0.5, 0.5, 0.5), 1.0 / 6, 1e-3);
}

}  // namespace

namespace {

// What a buddy keeps of a rank's matrix (app.static_matrix): the packed
// image unpacks bitwise into the CSR arrays and b, on every block of a
// 4-rank split, and is a small fraction of them (issue 29 item 6: with the
// CSR arrays the buddy's copy cost 0.6x miniFE's whole RSS).
TEST(MinifeProblem, PackedRowsUnpackBitwiseAndSmall) {
  for (ProblemKind kind : {ProblemKind::minife, ProblemKind::unit}) {
    const Params p = cube(kind, 24);
    for (int r = 0; r < 4; ++r) {
      Problem a(p, r, 4);
      a.assemble(p);
      miniapps::minife::PackedRows packed;
      packed.pack(a);
      Problem back(p, r, 4);
      EXPECT_FALSE(back.assembled());
      packed.unpack(back);
      ASSERT_TRUE(back.assembled());
      const auto same = [](const auto& x, const auto& y) {
        return x.extent(0) == y.extent(0) &&
               std::memcmp(x.data(), y.data(), x.span() * sizeof(*x.data())) == 0;
      };
      EXPECT_TRUE(same(a.row_ptr, back.row_ptr));
      EXPECT_TRUE(same(a.col, back.col));
      EXPECT_TRUE(same(a.val, back.val));
      EXPECT_TRUE(same(a.b, back.b));
      const double csr = double(a.row_ptr.span() * 8 + a.col.span() * 4 + a.val.span() * 8 + a.b.span() * 8);
      EXPECT_LT(double(packed.bytes().size()), 0.1 * csr) << "rank " << r;
    }
  }
}

}  // namespace

// CG's vectors have the same addresses modulo 4 KiB in every build (the fx
// app and its baseline), at least 1 KiB apart there, whatever the heap held.
TEST(MinifeProblem, VectorsStaggeredWithinAPage) {
  std::vector<void*> clutter;  // a heap in another state than a fresh one
  for (std::size_t n : {24u, 1000u, 5000u, 40000u}) clutter.push_back(std::malloc(n));
  for (std::size_t len : {37u, 2600u, 9800u, 72000u}) {
    const auto v = miniapps::minife::staggered_vectors("test", {len, len, len + 50, len});
    ASSERT_EQ(v.size(), 4u);
    for (std::size_t k = 0; k < v.size(); ++k) {
      EXPECT_EQ(v[k].extent(0), k == 2 ? len + 50 : len);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(v[k].data()) % 4096, k * 1024)
          << "vector " << k << ", length " << len;
      if (k > 0) {
        EXPECT_GE(v[k].data(), v[k - 1].data() + v[k - 1].extent(0)) << "vectors overlap";
      }
    }
  }
  for (void* p : clutter) std::free(p);
}
