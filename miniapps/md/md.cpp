// Sample runs:
//   ./fx run -n 4 -s 2 build/miniapps/md/md
//   FX_INJECT='2@45' ./fx run -n 4 -s 2 build/miniapps/md/md --fx-set checkpoint.memory.every=20
//   ./fx run -n 4 -s 1 build/miniapps/md/md --fx-config tests/e2e/miniapps/md.yaml
//
// Description:
//   LAMMPS's bench/in.lj (Lennard-Jones liquid, fcc start at density
//   0.8442, T 1.44, cutoff 2.5, velocity Verlet, neighbour lists rebuilt
//   every 20 steps) as an fx::ResilientApp. The state is the owned atoms'
//   x, v and id, whose count changes as atoms migrate: they are resizable
//   store members, committed only right after a rebuild step
//   (can_checkpoint), where they are all there is. After a restore,
//   restored() rebuilds ghosts, bins, lists and forces from them, and the
//   run continues bitwise as the failure-free one and the plain baseline
//   (md_baseline.cpp; both run md.hpp). After a shrink, resize() gives
//   each new rank the atoms of the checkpoint inside its new sub-box; the
//   trajectories do not depend on the decomposition, so the state digest
//   stays bitwise and the thermo sums agree to rounding. Thermo rows on
//   stdout (logical rank 0), not repeated for the steps a recovery runs
//   again. Parameters: flags (--help) or the YAML app: section (nx, ny,
//   nz, steps, thermo_every, reneighbor_every, seed, density, temperature,
//   dt, cutoff, skin); flags win.
#include "md.hpp"

#include <miniapps/fx_support.hpp>

#include <fx/fx.hpp>

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace {

using miniapps::md::Params;
using Simulation = miniapps::md::Simulation<fx::Comm>;
constexpr const char* kName = "md";
constexpr const char* kDescription = "Lennard-Jones MD (LAMMPS in.lj), resilient with fx";

// The atoms of an old rank's checkpoint image inside this rank's sub-box,
// appended to the host arrays (after a shrink).
struct Gathered {
  std::vector<double> x, v;
  std::vector<std::int64_t> id;

  void take(const fx::PriorPiece& piece, const miniapps::md::Domain& dom) {
    std::size_t nx = 0, nv = 0, nid = 0;
    const double* px = piece.data<double>("x", &nx);
    const double* pv = piece.data<double>("v", &nv);
    const std::int64_t* pid = piece.data<std::int64_t>("id", &nid);
    if (nx != 3 * nid || nv != 3 * nid)
      FX_THROW(fx::CheckpointError, "md: old rank " + std::to_string(piece.rank()) + "'s image holds " +
                                        std::to_string(nid) + " ids but " + std::to_string(nx) + " and " +
                                        std::to_string(nv) + " position and velocity components");
    for (std::size_t i = 0; i < nid; ++i) {
      if (!dom.owns(px[3 * i], px[3 * i + 1], px[3 * i + 2])) continue;
      x.insert(x.end(), px + 3 * i, px + 3 * i + 3);
      v.insert(v.end(), pv + 3 * i, pv + 3 * i + 3);
      id.push_back(pid[i]);
    }
  }
};

class MdApp : public fx::ResilientApp {
 public:
  // The app: keys, checked by fx::run before any MPI communication.
  static std::vector<std::string> config_keys() { return miniapps::param_keys<Params>(); }

  // Every (re)start of this process and after a shrink: parameters, the
  // decomposition for ctx.size() ranks, the (empty) atom arrays and their
  // registration by handle (migration reallocates them).
  void setup(fx::Context& ctx) override {
    const Params p = miniapps::resolved_params<Params>(ctx, kName, kDescription);
    reneighbor_every_ = p.reneighbor_every;
    sim_ = std::make_unique<Simulation>(p, ctx.rank(), ctx.size());
    sim_->on_thermo(thermo_sink(ctx));
    sim_->on_halo([&ctx] { ctx.fault_point(fx::Phase::halo); });
    auto& store = ctx.store();
    auto& atoms = sim_->atoms();
    store.add("x", fx::resizable(atoms.x));
    store.add("v", fx::resizable(atoms.v));
    store.add("id", fx::resizable(atoms.id));
    store.add_scalar("step", sim_->step_count());
    store.add_scalar("start_time", sim_->start_time());
  }

  // A fresh start (again, when a failure came before the first commit:
  // the header and step 0 were printed then).
  void initialize(fx::Context& ctx) override {
    if (ctx.recoveries() > 0) sim_->on_thermo({});
    sim_->initialize(ctx.comm());
    sim_->on_thermo(thermo_sink(ctx));
  }

  // Commits only right after a rebuild step: the owned arrays are then
  // exactly what reneighbor() rebuilds the rest from.
  bool can_checkpoint(fx::Context&, std::int64_t iteration) override {
    return iteration % reneighbor_every_ == 0;
  }

  void restored(fx::Context& ctx, const fx::RestoreInfo& info) override {
    miniapps::refuse_version_past_end<Params>(ctx, info, kName, kDescription, "steps", sim_->params().steps);
    if (sim_->step_count() != info.iteration)
      FX_THROW(fx::Error, "md: restored state is at step " + std::to_string(sim_->step_count()) +
                              " but the version's iteration is " + std::to_string(info.iteration));
    sim_->restored(ctx.comm(), info.iteration);
  }

  // Spares ran out: each new rank takes the checkpoint's atoms inside its
  // new sub-box from the old ranks whose sub-boxes overlap it (at a
  // rebuild step every atom lies in its old rank's sub-box). restored()
  // follows and rebuilds the rest.
  std::int64_t resize(fx::Context& ctx) override {
    setup(ctx);
    const Params& p = sim_->params();
    const miniapps::md::Domain dom = sim_->domain();
    Gathered got;
    const auto version = ctx.store().restore_resized(
        [&](const fx::PriorVersion& v) { return overlapping_ranks(p, dom, v.size); },
        [&](const fx::PriorPiece& piece) {
          got.take(piece, dom);
          sim_->step_count() = piece.scalar<std::int64_t>("step");
          sim_->start_time() = piece.scalar<double>("start_time");
        });
    if (!version) {
      initialize(ctx);
      return 0;
    }
    fill(sim_->atoms(), got);
    return version->iteration;
  }

  // Runtime iteration it: MD step it + 1 (after it, the runtime is at it + 1).
  bool step(fx::Context& ctx, std::int64_t it) override {
    if (it != sim_->step_count())
      FX_THROW(fx::Error, "md: runtime iteration " + std::to_string(it) + " but the state is at step " +
                              std::to_string(sim_->step_count()));
    return sim_->step(ctx.comm());
  }

  void finish(fx::Context& ctx) override { miniapps::publish_results(ctx, sim_->results(ctx.comm())); }

 private:
  // Thermo rows on stdout, except for steps run again after a failure and
  // a step that met one (fx abandons it and runs it again).
  static Simulation::Sink thermo_sink(fx::Context& ctx) {
    return [&ctx](const std::string& line) {
      if (ctx.replaying() || ctx.failing()) return;
      std::printf("%s\n", line.c_str());
      std::fflush(stdout);
    };
  }

  // The old ranks (of `old_size`) whose sub-boxes overlap `dom`'s.
  static std::vector<int> overlapping_ranks(const Params& p, const miniapps::md::Domain& dom, int old_size) {
    std::vector<int> out;
    for (int q = 0; q < old_size; ++q) {
      const auto old = miniapps::md::make_domain(p, q, old_size);
      bool overlap = true;
      for (int d = 0; d < 3; ++d) overlap = overlap && old.lo[d] < dom.hi[d] && dom.lo[d] < old.hi[d];
      if (overlap) out.push_back(q);
    }
    return out;
  }

  static void fill(miniapps::md::Atoms& atoms, const Gathered& got) {
    const auto n = static_cast<std::int64_t>(got.id.size());
    atoms.allocate(n);
    const auto x = Kokkos::create_mirror_view(atoms.x);
    const auto v = Kokkos::create_mirror_view(atoms.v);
    const auto id = Kokkos::create_mirror_view(atoms.id);
    for (std::int64_t i = 0; i < n; ++i) {
      for (int d = 0; d < 3; ++d) {
        x(i, d) = got.x[3 * i + d];
        v(i, d) = got.v[3 * i + d];
      }
      id(i) = got.id[i];
    }
    Kokkos::deep_copy(atoms.x, x);
    Kokkos::deep_copy(atoms.v, v);
    Kokkos::deep_copy(atoms.id, id);
  }

  std::unique_ptr<Simulation> sim_;
  std::int64_t reneighbor_every_ = 20;
};

}  // namespace

int main(int argc, char** argv) {
  // Help and malformed flags end here, before MPI starts.
  Params defaults;
  if (auto code = miniapps::preflight_cli(defaults.declare(), kName, kDescription, argc, argv)) return *code;
  return fx::run<MdApp>(argc, argv);
}
