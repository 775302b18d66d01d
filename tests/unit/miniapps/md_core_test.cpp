// The md mini-app's physics core on one rank, without MPI: the lattice and
// the initial velocities (independent of the decomposition, bitwise), the
// step-0 thermo row of LAMMPS's in.lj, and a restart from the owned arrays
// at a rebuild step that continues bitwise.
#include <Kokkos_Core.hpp>
#include <gtest/gtest.h>

#include "md.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

using miniapps::md::Atoms;
using miniapps::md::Params;

class KokkosEnvironment : public ::testing::Environment {
 public:
  void SetUp() override { Kokkos::initialize(); }
  void TearDown() override { Kokkos::finalize(); }
};
[[maybe_unused]] auto* const kokkos_env = ::testing::AddGlobalTestEnvironment(new KokkosEnvironment);

// A communicator of one rank: alone along every dimension, the exchanges
// never send; the reductions see one part.
class SelfComm {
 public:
  struct Request {};
  int rank() const { return 0; }
  int size() const { return 1; }
  template <class T>
  Request isend(const T*, std::size_t, int, int) const {
    ADD_FAILURE() << "a rank alone sent a message";
    return {};
  }
  template <class T>
  Request irecv(T*, std::size_t, int, int) const {
    ADD_FAILURE() << "a rank alone posted a receive";
    return {};
  }
  void wait_all(std::vector<Request>&) const {}
  template <class T>
  std::vector<T> gather(const T& value, int) const {
    return {value};
  }
  template <class T>
  void bcast(T*, std::size_t, int) const {}
  void barrier() const {}
};
using Simulation = miniapps::md::Simulation<SelfComm>;

Params cube(std::int64_t n) {
  Params p;
  p.nx = p.ny = p.nz = n;
  return p;
}

struct HostAtom {
  double x[3], v[3];
};

// Every atom of `atoms` by id, on the host.
std::map<std::int64_t, HostAtom> by_id(const Atoms& atoms) {
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.v);
  const auto id = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  std::map<std::int64_t, HostAtom> out;
  for (std::size_t i = 0; i < id.extent(0); ++i) {
    HostAtom a{};
    for (int d = 0; d < 3; ++d) {
      a.x[d] = x(i, d);
      a.v[d] = v(i, d);
    }
    EXPECT_TRUE(out.emplace(id(i), a).second) << "id " << id(i) << " twice";
  }
  return out;
}

bool same_bits(const HostAtom& a, const HostAtom& b) { return std::memcmp(&a, &b, sizeof a) == 0; }

TEST(MdLattice, EveryRankSplitHoldsEachAtomOnceWithTheSameBits) {
  const Params p = cube(6);
  Atoms whole;
  miniapps::md::create_lattice(p, miniapps::md::make_domain(p, 0, 1), whole);
  const auto reference = by_id(whole);
  ASSERT_EQ(static_cast<std::int64_t>(reference.size()), p.atoms());
  EXPECT_EQ(reference.begin()->first, 1);
  EXPECT_EQ(reference.rbegin()->first, p.atoms());
  for (const int ranks : {2, 3, 4, 8}) {
    std::map<std::int64_t, HostAtom> joined;
    for (int r = 0; r < ranks; ++r) {
      Atoms part;
      const auto dom = miniapps::md::make_domain(p, r, ranks);
      miniapps::md::create_lattice(p, dom, part);
      for (const auto& [id, a] : by_id(part)) {
        for (int d = 0; d < 3; ++d) EXPECT_TRUE(a.x[d] >= dom.lo[d] && a.x[d] < dom.hi[d]);
        EXPECT_TRUE(joined.emplace(id, a).second) << "id " << id << " on two ranks";
      }
    }
    ASSERT_EQ(joined.size(), reference.size()) << ranks << " ranks";
    for (const auto& [id, a] : reference) EXPECT_TRUE(same_bits(a, joined.at(id))) << "id " << id;
  }
}

TEST(MdLattice, VelocitiesHaveNoMomentumAndTheSetTemperature) {
  const Params p = cube(5);
  Atoms atoms;
  miniapps::md::create_lattice(p, miniapps::md::make_domain(p, 0, 1), atoms);
  double momentum[3] = {0, 0, 0}, sum_v2 = 0;
  for (const auto& [id, a] : by_id(atoms))
    for (int d = 0; d < 3; ++d) {
      momentum[d] += a.v[d];
      sum_v2 += a.v[d] * a.v[d];
    }
  for (const double m : momentum) EXPECT_NEAR(m, 0.0, 1e-12);
  EXPECT_NEAR(sum_v2 / (3.0 * double(p.atoms()) - 3.0), p.temperature, 1e-12);
  // Atoms 1 and 2 in different cells of the hash: not the same velocity.
  const auto all = by_id(atoms);
  EXPECT_NE(all.at(1).v[0], all.at(2).v[0]);
}

// The perfect lattice: every atom in the same place relative to its
// neighbours, so each force is ~0 and E_pair is the lattice sum of in.lj.
TEST(MdThermo, StepZeroOfASmallBoxIsTheLatticeSum) {
  const Params p = cube(5);
  Simulation sim(p, 0, 1);
  std::vector<std::string> lines;
  sim.on_thermo([&](const std::string& line) { lines.push_back(line); });
  const SelfComm comm;
  sim.initialize(comm);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0], "Step Temp E_pair E_mol TotEng Press");
  const auto t = sim.thermo(comm);
  const double n = double(p.atoms()), dof = 3.0 * n - 3.0;
  EXPECT_EQ(t.atoms, p.atoms());
  EXPECT_NEAR(t.temp, 1.44, 1e-13);
  EXPECT_NEAR(t.e_pair, -6.7733681, 5e-8);
  EXPECT_EQ(t.e_mol, 0.0);
  EXPECT_NEAR(t.etotal, t.e_pair + 0.5 * dof * t.temp / n, 1e-13);
  // The virial per volume is the lattice's too: LAMMPS's -5.0197073 at
  // 32,000 atoms less its kinetic part, rho T (3N - 3) / 3N.
  const double virial_part = -5.0197073 - p.density * 1.44 * (3.0 * 32000 - 3.0) / (3.0 * 32000);
  EXPECT_NEAR(t.press - p.density * t.temp * dof / (3.0 * n), virial_part, 1e-7);
  const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sim.forces().f);
  for (std::size_t i = 0; i < f.extent(0); ++i)
    for (int d = 0; d < 3; ++d) ASSERT_NEAR(f(i, d), 0.0, 1e-10) << "atom " << i;
  // Full lists: about 4/3 pi 2.8^3 0.8442 = 77.6 neighbours each; ghosts
  // fill a shell 2.8 wide around the 8.4-wide box.
  EXPECT_GT(sim.all_atoms().nall, p.atoms());
}

// LAMMPS's published log of bench/in.lj, step 0, digit for digit.
TEST(MdThermo, StepZeroRowIsLammps) {
  const Params p;  // in.lj: 20x20x20 cells, 32,000 atoms
  Simulation sim(p, 0, 1);
  std::vector<std::string> lines;
  sim.on_thermo([&](const std::string& line) { lines.push_back(line); });
  sim.initialize(SelfComm());
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[1], "       0         1.44   -6.7733681            0   -4.6134356   -5.0197073");
}

// Ghosts, bins, lists and the forward communication between rebuilds
// against all pairs by minimum image (the 8.4-wide box is over twice the
// cutoff), in a liquid 10 steps after a rebuild.
TEST(MdForces, MatchAllPairsByMinimumImage) {
  Params p = cube(5);
  p.steps = 30;
  const SelfComm comm;
  Simulation sim(p, 0, 1);
  sim.initialize(comm);
  while (!sim.step(comm)) {
  }
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sim.atoms().x);
  const auto f = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), sim.forces().f);
  const auto& dom = sim.domain();
  const std::size_t n = x.extent(0);
  double energy = 0.0, largest = 0.0;
  for (std::size_t i = 0; i < n; ++i) {
    double fi[3] = {0, 0, 0};
    for (std::size_t j = 0; j < n; ++j) {
      if (j == i) continue;
      double r[3], rsq = 0.0;
      for (int d = 0; d < 3; ++d) {
        r[d] = x(i, d) - x(j, d);
        r[d] -= dom.length[d] * std::round(r[d] / dom.length[d]);
        rsq += r[d] * r[d];
      }
      if (rsq >= p.cutoff * p.cutoff) continue;
      const double r6inv = 1.0 / (rsq * rsq * rsq);
      for (int d = 0; d < 3; ++d) fi[d] += r[d] * r6inv * (48.0 * r6inv - 24.0) / rsq;
      energy += 0.5 * 4.0 * r6inv * (r6inv - 1.0);
    }
    for (int d = 0; d < 3; ++d) {
      EXPECT_NEAR(f(i, d), fi[d], 1e-9 * (1.0 + std::abs(fi[d]))) << "atom " << i << " along " << d;
      largest = std::max(largest, std::abs(fi[d]));
    }
  }
  EXPECT_GT(largest, 1.0);  // not the lattice any more
  EXPECT_NEAR(sim.thermo(comm).e_pair, energy / double(n), 1e-12);
}

// The owned arrays after a rebuild step are the whole state: a new
// simulation given copies of them continues bitwise (the fx app's
// checkpoint and restored()).
TEST(MdRestart, FromTheOwnedArraysAtARebuildStepIsBitwise) {
  Params p = cube(5);
  p.steps = 60;
  p.thermo_every = 1000;
  const SelfComm comm;
  Simulation first(p, 0, 1);
  first.initialize(comm);
  while (first.step_count() < 40) first.step(comm);
  Atoms saved;
  saved.allocate(first.atoms().size());
  Kokkos::deep_copy(saved.x, first.atoms().x);
  Kokkos::deep_copy(saved.v, first.atoms().v);
  Kokkos::deep_copy(saved.id, first.atoms().id);
  while (!first.step(comm)) {
  }
  Simulation second(p, 0, 1);
  second.atoms() = saved;
  second.restored(comm, 40);
  while (!second.step(comm)) {
  }
  EXPECT_EQ(second.step_count(), 60);
  const auto a = by_id(first.atoms()), b = by_id(second.atoms());
  ASSERT_EQ(a.size(), b.size());
  for (const auto& [id, atom] : a) ASSERT_TRUE(same_bits(atom, b.at(id))) << "id " << id;
  const auto ta = first.thermo(comm), tb = second.thermo(comm);
  EXPECT_EQ(ta.temp, tb.temp);
  EXPECT_EQ(ta.e_pair, tb.e_pair);
  EXPECT_EQ(ta.press, tb.press);
  // The liquid has moved on from the lattice.
  EXPECT_LT(ta.temp, 1.3);
  EXPECT_GT(ta.e_pair, -6.7);
}

}  // namespace
