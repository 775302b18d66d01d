#pragma once
// The md mini-app's physics, shared by the fx app (md.cpp) and the plain
// MPI + Kokkos baseline (md_baseline.cpp): LAMMPS's bench/in.lj, a
// Lennard-Jones liquid started from an fcc lattice at density 0.8442 and
// temperature 1.44, cutoff 2.5, velocity Verlet (dt 0.005), neighbour
// skin 0.3 with lists rebuilt every 20 steps, spatial decomposition on a
// 3D rank grid, thermo rows in LAMMPS's layout. Templated on the
// communicator (fx::Comm or miniapps::PlainComm).
//
// State: the owned atoms (x, v, id, in their order) and the step count.
// At a rebuild step, reneighbor() derives everything else from them (wrap,
// migration, ghosts, bins, lists), and every per-rank operation is
// deterministic given them: the fx app checkpoints them right after a
// rebuild step and, after a restore, calls restored() to rebuild the rest,
// and the run continues bitwise as without the failure. Neighbour lists
// are ordered by global keys (neighbor.hpp), so even the trajectories are
// bitwise independent of the decomposition; the thermo sums are not (their
// per-rank partials differ), only to rounding.
//
// Deterministic on any Kokkos backend, not only Serial: no kernel reduces
// doubles with parallel_reduce (with OpenMP its combination order varies
// from run to run); forces are per-atom sums in list order, totals go
// through ordered_sum (fixed chunks, then in order), bins filled by
// atomics are sorted by a unique key, and index lists come from
// parallel_scan.
#include "atoms.hpp"
#include "domain.hpp"
#include "exchange.hpp"
#include "force.hpp"
#include "lattice.hpp"
#include "neighbor.hpp"
#include "params.hpp"

#include <miniapps/plain_comm.hpp>
#include <miniapps/reduce.hpp>
#include <miniapps/results.hpp>

#include <Kokkos_Core.hpp>
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>

namespace miniapps::md {

// One row of LAMMPS's default thermo output (thermo_style one, lj units).
struct Thermo {
  std::int64_t step = 0;
  std::int64_t atoms = 0;
  double temp = 0, e_pair = 0, e_mol = 0, etotal = 0, press = 0;
};

inline std::string thermo_header() { return "Step Temp E_pair E_mol TotEng Press"; }

inline std::string thermo_row(const Thermo& t) {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%8lld %12.8g %12.8g %12.8g %12.8g %12.8g", static_cast<long long>(t.step),
                t.temp, t.e_pair, t.e_mol, t.etotal, t.press);
  return buf;
}

// LAMMPS's conventions: dof = 3N - 3, Temp = sum m v^2 / dof, E_pair per
// atom, TotEng = E_pair + kinetic energy per atom, Press = (dof Temp +
// virial) / 3V. Sums: kinetic, pair energy, virial, atoms.
inline Thermo thermo_from_sums(std::int64_t step, const std::array<double, 4>& sum, double volume) {
  Thermo t;
  t.step = step;
  t.atoms = static_cast<std::int64_t>(sum[3]);
  const double n = sum[3], dof = 3.0 * n - 3.0;
  t.temp = sum[0] / dof;
  t.e_pair = sum[1] / n;
  t.etotal = t.e_pair + 0.5 * dof * t.temp / n;
  t.press = (dof * t.temp + sum[2]) / 3.0 / volume;
  return t;
}

// This rank's share of the digest: the wrap-around sum over atoms of
// xxHash3(x and v bits, seed = id), independent of order and of the split.
inline std::uint64_t local_digest(const Atoms& atoms) {
  const auto x = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.x);
  const auto v = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.v);
  const auto id = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), atoms.id);
  std::uint64_t sum = 0;
  for (std::size_t i = 0; i < id.extent(0); ++i) {
    double state[6];
    for (int d = 0; d < 3; ++d) {
      state[d] = x(i, d);
      state[3 + d] = v(i, d);
    }
    sum += XXH3_64bits_withSeed(state, sizeof state, static_cast<std::uint64_t>(id(i)));
  }
  return sum;
}

template <class Comm>
class Simulation {
 public:
  using Sink = std::function<void(const std::string&)>;

  // Nothing allocated beyond empty arrays: a recruited spare's state comes
  // from the checkpoint, a fresh run's from initialize().
  Simulation(const Params& p, int rank, int nranks)
      : p_(p), dom_(make_domain(p, rank, nranks)), exchange_(dom_, p.ghost_cutoff()) {}

  // Thermo lines (the header, then rows), said by rank 0 only.
  void on_thermo(Sink sink) { sink_ = std::move(sink); }
  /// Called in every step once the ghosts are current (after the migration
  /// and borders of a rebuild step, or the forward communication), before
  /// the forces: a place inside a step for fault injection.
  void on_halo(std::function<void()> hook) { halo_ = std::move(hook); }

  // A fresh start: the lattice and velocities, step 0's rebuild and forces,
  // the header and the step-0 row (collective).
  void initialize(const Comm& comm) {
    create_lattice(p_, dom_, atoms_);
    step_ = 0;
    start_time_ = wtime();
    reneighbor(comm);
    compute_forces();
    say(thermo_header());
    say(thermo_row(thermo(comm)));
  }

  // The owned arrays were just restored as they were after rebuild step
  // `step`: rebuild what derives from them (collective).
  void restored(const Comm& comm, std::int64_t step) {
    step_ = step;
    reneighbor(comm);
    compute_forces();
  }

  // One velocity Verlet step (collective); true when the run is done.
  bool step(const Comm& comm) {
    timer_.tick();
    const double t0 = wtime();
    const std::int64_t n = step_ + 1;
    integrate_initial();
    if (n % p_.reneighbor_every == 0)
      reneighbor(comm);
    else
      forward_comm(comm);
    if (halo_) halo_();
    compute_forces();
    integrate_final();
    step_ = n;
    if (n % p_.thermo_every == 0 || n == p_.steps) say(thermo_row(thermo(comm)));
    step_seconds_ += wtime() - t0;
    ++steps_done_;
    return n >= p_.steps;
  }

  // Wrap, migrate, ghosts, bins, neighbour lists (a rebuild step).
  void reneighbor(const Comm& comm) {
    const double t0 = wtime();
    wrap_positions(atoms_.x, dom_);
    exchange_.migrate(comm, atoms_);
    exchange_.borders(comm, atoms_, all_);
    neighbors_.build(all_, dom_, p_.ghost_cutoff());
    fence_own();
    neighbor_seconds_ += wtime() - t0;
  }

  // Ghost positions from their owners (every step but rebuild steps).
  void forward_comm(const Comm& comm) {
    const double t0 = wtime();
    exchange_.forward(comm, atoms_, all_);
    comm_seconds_ += wtime() - t0;
  }

  void compute_forces() {
    const double t0 = wtime();
    lj_forces(all_, neighbors_, p_.cutoff, forces_);
    fence_own();
    force_seconds_ += wtime() - t0;
  }

  // v += dt/2 f; x += dt v (mass 1: LJ units).
  void integrate_initial() {
    const Vec3s x = atoms_.x, v = atoms_.v, f = forces_.f;
    const double dt = p_.dt, dtf = 0.5 * p_.dt;
    Kokkos::parallel_for(
        "md::integrate_initial", Range(0, atoms_.size()), KOKKOS_LAMBDA(const std::int64_t i) {
          for (int d = 0; d < 3; ++d) {
            v(i, d) += dtf * f(i, d);
            x(i, d) += dt * v(i, d);
          }
        });
  }

  // v += dt/2 f.
  void integrate_final() {
    const Vec3s v = atoms_.v, f = forces_.f;
    const double dtf = 0.5 * p_.dt;
    Kokkos::parallel_for(
        "md::integrate_final", Range(0, atoms_.size()), KOKKOS_LAMBDA(const std::int64_t i) {
          for (int d = 0; d < 3; ++d) v(i, d) += dtf * f(i, d);
        });
    fence_own();
  }

  // The thermo quantities now (collective, fixed-order sums). Throws when
  // atoms were lost.
  Thermo thermo(const Comm& comm) const {
    const Vec3s v = atoms_.v;
    const double ke = ordered_sum(
        atoms_.size(), KOKKOS_LAMBDA(const std::int64_t i) {
          return v(i, 0) * v(i, 0) + v(i, 1) * v(i, 1) + v(i, 2) * v(i, 2);
        });
    const PairTally pair = tally(forces_, atoms_.size());
    const auto sum =
        ordered_allreduce_sum<Comm, 4>(comm, {ke, pair.energy, pair.virial, double(atoms_.size())});
    const Thermo t = thermo_from_sums(step_, sum, dom_.volume());
    if (t.atoms != p_.atoms())
      throw std::runtime_error("md: " + std::to_string(t.atoms) + " atoms at step " + std::to_string(step_) +
                               ", expected " + std::to_string(p_.atoms()));
    return t;
  }

  // The answer (collective; complete on rank 0).
  Results results(const Comm& comm) const {
    const Thermo t = thermo(comm);
    Results r;
    r.add("atoms", t.atoms);
    r.add("steps", step_);
    r.add("temp", t.temp);
    r.add("e_pair", t.e_pair);
    r.add("etotal", t.etotal);
    r.add("press", t.press);
    std::uint64_t digest = 0;
    for (const std::uint64_t part : comm.gather(local_digest(atoms_), 0)) digest += part;
    r.add("digest", hex64(digest));
    add_timings(r);
    std::int64_t rss_max = 0;  // VmHWM, the largest over ranks
    for (const std::int64_t kb : comm.gather(peak_rss_kb(), 0)) rss_max = std::max(rss_max, kb);
    r.add_timing("peak_rss_max_kb", double(rss_max));
    return r;
  }

  // The checkpointed state.
  Atoms& atoms() { return atoms_; }
  const Atoms& atoms() const { return atoms_; }
  std::int64_t& step_count() { return step_; }
  double& start_time() { return start_time_; }
  const Params& params() const { return p_; }
  const Domain& domain() const { return dom_; }
  // Derived state, for tests.
  const AllAtoms& all_atoms() const { return all_; }
  const ForceField& forces() const { return forces_; }

 private:
  void say(const std::string& line) const {
    if (dom_.rank == 0 && sink_) sink_(line);
  }

  // This process's times: the loop (from initialize(), recoveries
  // included), inside step(), and its parts.
  void add_timings(Results& r) const {
    r.add_timing("loop_s", wtime() - start_time_);
    r.add_timing("step_s", step_seconds_);
    r.add_timing("force_s", force_seconds_);
    r.add_timing("neighbor_s", neighbor_seconds_);
    r.add_timing("comm_s", comm_seconds_);
    r.add_timing("step_median_s", timer_.percentile(0.5));
    r.add_timing("step_p10_s", timer_.percentile(0.1));
    r.add_timing("matom_steps_per_sec", steps_done_ > 0 && step_seconds_ > 0
                                            ? double(p_.atoms()) * double(steps_done_) / step_seconds_ * 1e-6
                                            : 0.0);
  }

  Params p_;
  Domain dom_;
  Exchange<Comm> exchange_;
  Atoms atoms_;
  AllAtoms all_;
  NeighborList neighbors_;
  ForceField forces_;
  Sink sink_;
  std::function<void()> halo_;
  std::int64_t step_ = 0;
  double start_time_ = 0.0;
  double step_seconds_ = 0.0, force_seconds_ = 0.0, neighbor_seconds_ = 0.0, comm_seconds_ = 0.0;
  std::int64_t steps_done_ = 0;  // by this process
  IterationTimer timer_;
};

}  // namespace miniapps::md
