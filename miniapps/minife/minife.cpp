// Sample runs:
//   ./fx run -n 4 -s 2 build/miniapps/minife/minife --nx 30 --ny 30 --nz 30
//   ./fx run -n 4 -s 2 build/miniapps/minife/minife --fx-config configs/minife.yaml
//   FX_INJECT='1@40' ./fx run -n 4 -s 2 build/miniapps/minife/minife --fx-set checkpoint.memory.every=10
//
// Description:
//   What Mantevo miniFE does, written anew, as an fx::ResilientApp:
//   assemble the finite-element matrix of steady heat conduction on a brick
//   of nx x ny x nz 8-node hexahedra (27-point connectivity, Dirichlet
//   boundary), distributed by rows, CSR in Kokkos Views, and solve it with
//   unpreconditioned CG to a relative tolerance. The CG state (x, r, p,
//   r.r, iteration) is checkpointed per the fx policy; after a failure the
//   spares re-assemble their rows, the state is restored and CG resumes,
//   ending with the iteration count and solution norm of the failure-free
//   run and of the plain baseline (minife_baseline.cpp; same code in
//   minife.hpp). Parameters: flags (--help) or the YAML app: section
//   (nx, ny, nz, max_iterations, tolerance, progress_every); flags win.
#include "minife.hpp"

#include <miniapps/fx_support.hpp>

#include <fx/fx.hpp>

#include <memory>

namespace {

using miniapps::minife::Params;
using Cg = miniapps::minife::Cg<fx::Comm>;
constexpr const char* kName = "minife";
constexpr const char* kDescription = "miniFE-like FE heat conduction + CG, resilient with fx";

class MinifeApp : public fx::ResilientApp {
 public:
  // Every (re)start of this process and after a shrink: parameters, the
  // rows of A for ctx.size() ranks (assembly is deterministic, so a spare
  // rebuilds exactly the rows it takes over), the CG vectors, registration.
  void setup(fx::Context& ctx) override {
    Params p;
    miniapps::ParamSet set = p.declare();
    miniapps::resolve_params(set, ctx, kName, kDescription);
    p.check(set, ctx.size());
    cg_ = std::make_unique<Cg>(p, ctx.rank(), ctx.size(),
                               [](const std::string& line) { fx::log::info("{}", line); });
    cg_->on_halo([&ctx] { ctx.fault_point(fx::Phase::halo); });
    auto& store = ctx.store();
    store.add("x", cg_->x());
    store.add("r", cg_->r());
    store.add("p", cg_->p_owned());
    store.add_scalar("rr", cg_->rr());
    store.add_scalar("norm_b", cg_->norm_b());
    store.add_scalar("iteration", cg_->iteration());
    store.add_scalar("solve_start", cg_->solve_start());
  }

  void initialize(fx::Context& ctx) override { cg_->initialize(ctx.comm()); }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (it != cg_->iteration())
      FX_THROW(fx::Error, "minife: runtime iteration " + std::to_string(it) + " but restored state is at " +
                              std::to_string(cg_->iteration()));
    return cg_->step(ctx.comm());
  }

  void finish(fx::Context& ctx) override { miniapps::publish_results(ctx, cg_->results(ctx.comm())); }

 private:
  std::unique_ptr<Cg> cg_;
};

}  // namespace

int main(int argc, char** argv) {
  Params defaults;
  if (auto code = miniapps::preflight_cli(defaults.declare(), kName, kDescription, argc, argv)) return *code;
  return fx::run<MinifeApp>(argc, argv);
}
