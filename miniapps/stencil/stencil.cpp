// Sample runs:
//   ./fx run -n 4 -s 2 build/miniapps/stencil/stencil --nx 64 --ny 64 --nz 64 --iterations 200
//   ./fx run -n 4 -s 2 build/miniapps/stencil/stencil --fx-config configs/stencil.yaml
//   FX_INJECT='2@60' ./fx run -n 4 -s 2 build/miniapps/stencil/stencil --fx-set checkpoint.memory.every=20
//
// Description:
//   3D steady heat equation in the unit cube, solved by 7-point Jacobi
//   iteration on a global nx x ny x nz grid split in 3D over the logical
//   ranks, as an fx::ResilientApp: when processes die, spares take their
//   logical ranks, the field is restored from the last checkpoint (buddy
//   memory or HDF5, per the policy) and the sweep resumes. Every reduction
//   has a fixed order (see miniapps/reduce.hpp), so the iterations, the
//   global L2 norm and the field checksum printed at the end are bitwise
//   those of the failure-free run and of the plain baseline
//   (stencil_baseline.cpp), which runs the same Solver (stencil.hpp).
//   Parameters: flags (--help) or the YAML app: section (nx, ny, nz,
//   iterations, residual_every, progress_every, tolerance); flags win.
#include "stencil.hpp"

#include <miniapps/fx_support.hpp>
#include <miniapps/regrid.hpp>

#include <fx/fx.hpp>

#include <memory>

namespace {

using miniapps::stencil::Params;
using Solver = miniapps::stencil::Solver<fx::Comm>;
constexpr const char* kName = "stencil";
constexpr const char* kDescription = "3D heat equation, 7-point Jacobi, resilient with fx";

class StencilApp : public fx::ResilientApp {
 public:
  // The app: keys, checked by fx::run before any MPI communication.
  static std::vector<std::string> config_keys() { return miniapps::param_keys<Params>(); }

  // Every (re)start of this process and after a shrink: parameters, the
  // decomposition for ctx.size() ranks, the fields, their registration.
  void setup(fx::Context& ctx) override {
    const Params p = miniapps::resolved_params<Params>(ctx, kName, kDescription);
    solver_ = std::make_unique<Solver>(p, ctx.rank(), ctx.size(),
                                       [](const std::string& line) { fx::log::info("{}", line); });
    solver_->on_halo([&ctx] { ctx.fault_point(fx::Phase::halo); });
    auto& store = ctx.store();
    store.add("u", fx::follow(*solver_->current()));  // the solver swaps buffers each sweep
    // The next sweep only reads u (it writes the other field and that
    // field's ghost faces): an asynchronous commit copies u beside it.
    store.set_snapshot("u", fx::Snapshot::during_next_step);
    store.add_scalar("iteration", solver_->iteration());
    store.add_scalar("residual", solver_->residual());
    store.add_scalar("start_time", solver_->start_time());
  }

  void initialize(fx::Context&) override { solver_->initialize(); }

  void restored(fx::Context& ctx, const fx::RestoreInfo& info) override {
    miniapps::refuse_version_past_end<Params>(ctx, info, kName, kDescription, "iterations",
                                              solver_->params().iterations);
  }

  // Spares ran out and the job goes on with fewer ranks: the fields are
  // rebuilt for the new decomposition and filled from the checkpoint images
  // of the old ranks whose blocks overlap this rank's new block. The Jacobi
  // update is pointwise, so the run continues bitwise as without failures.
  std::int64_t resize(fx::Context& ctx) override {
    setup(ctx);
    const auto& b = solver_->block();
    const miniapps::stencil::Field u = *solver_->current();
    auto host = Kokkos::create_mirror_view(u);
    Kokkos::deep_copy(host, 0.0);  // ghosts: walls below, halos from the first exchange
    miniapps::Decomp3 old;
    const auto version = ctx.store().restore_resized(
        [&](const fx::PriorVersion& v) {
          old = miniapps::Decomp3(v.size, b.decomp.global());
          return miniapps::overlapping_ranks(old, b.box);
        },
        [&](const fx::PriorPiece& piece) {
          const miniapps::Box box = old.box(piece.rank());
          std::size_t count = 0;
          const double* src = piece.data<double>("u", &count);
          if (count != static_cast<std::size_t>((box.n[0] + 2) * (box.n[1] + 2) * (box.n[2] + 2)))
            FX_THROW(fx::CheckpointError, "stencil: old rank " + std::to_string(piece.rank()) +
                                              "'s field has " + std::to_string(count) +
                                              " values, its block needs " + std::to_string(box.volume()) +
                                              " plus ghosts");
          miniapps::copy_overlap(box, src, 1, b.box, host.data(), 1);
          solver_->iteration() = piece.scalar<std::int64_t>("iteration");
          solver_->residual() = piece.scalar<double>("residual");
          solver_->start_time() = piece.scalar<double>("start_time");
        });
    if (!version) {
      initialize(ctx);
      return 0;
    }
    Kokkos::deep_copy(u, host);
    miniapps::stencil::apply_walls(u, b);
    solver_->ghosts_stale();  // the first step fills them from the new neighbours
    return version->iteration;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    // The runtime counts completed steps as the solver does; a mismatch
    // means the restored state is not the one the runtime resumes.
    if (it != solver_->iteration())
      FX_THROW(fx::Error, "stencil: runtime iteration " + std::to_string(it) + " but restored state is at " +
                              std::to_string(solver_->iteration()));
    return solver_->step(ctx.comm());
  }

  void finish(fx::Context& ctx) override { miniapps::publish_results(ctx, solver_->results(ctx.comm())); }

 private:
  std::unique_ptr<Solver> solver_;
};

}  // namespace

int main(int argc, char** argv) {
  // Help and malformed flags end here, before MPI starts.
  Params defaults;
  if (auto code = miniapps::preflight_cli(defaults.declare(), kName, kDescription, argc, argv)) return *code;
  return fx::run<StencilApp>(argc, argv);
}
