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
//   minife.hpp). With static_matrix (the default) A and b are static
//   store members: a recruited spare receives its rows from the buddy of
//   its predecessor instead of assembling them. Parameters: flags (--help)
//   or the YAML app: section (problem, nx, ny, nz, max_iterations,
//   tolerance, progress_every, verify_solution, summary, abft,
//   static_matrix); flags win. `--problem minife` solves Mantevo miniFE's
//   problem (miniapps/README.md).
//
//   With abft (--abft true), every CG iteration is a TryBlock that first
//   checks the CG state against checksums taken when the previous iteration
//   committed; a corrupted x, r, p or scalar (a soft error, e.g. fx's
//   bitflip injection) makes the block abort, and the policy's soft retry
//   re-runs the iteration from the state saved at admission:
//   FX_INJECT='target=1,iteration=30,phase=halo,action=bitflip,member=p' ./fx run -n 4 -s 1
//     build/miniapps/minife/minife --abft true
#include "minife.hpp"
#include "packed_rows.hpp"
#include "resize.hpp"

#include <miniapps/fx_support.hpp>

#include <fx/fx.hpp>

#include <array>
#include <cstdint>
#include <cstring>
#include <memory>

namespace {

using miniapps::minife::Params;
using Cg = miniapps::minife::Cg<fx::Comm>;
constexpr const char* kName = "minife";
constexpr const char* kDescription = "miniFE-like FE heat conduction + CG, resilient with fx";

// The bit patterns of v's entries summed as integers: any single flipped
// bit changes the sum (by +-2^k, never 0 mod 2^64), whatever the values,
// and integer sums do not depend on the order, so a recomputation on the
// same data is bitwise the same (no false alarm, no tolerance to pick).
template <class V>
std::uint64_t bit_sum(const V& v) {
  std::uint64_t sum = 0;
  Kokkos::parallel_reduce(
      "minife::abft_sum", Kokkos::RangePolicy<Kokkos::IndexType<std::int64_t>>(0, v.extent(0)),
      KOKKOS_LAMBDA(const std::int64_t i, std::uint64_t& acc) {
        std::uint64_t u = 0;
        std::memcpy(&u, &v(i), sizeof u);
        acc += u;
      },
      sum);
  return sum;
}

template <class T>
std::uint64_t bits_of(const T& value) {
  static_assert(sizeof(T) == sizeof(std::uint64_t));
  std::uint64_t u = 0;
  std::memcpy(&u, &value, sizeof u);
  return u;
}

class MinifeApp : public fx::ResilientApp {
 public:
  // The app: keys, checked by fx::run before any MPI communication.
  static std::vector<std::string> config_keys() { return miniapps::param_keys<Params>(); }

  // Every (re)start of this process and after a shrink: parameters, the
  // shape of this rank's rows for ctx.size() ranks, the CG vectors,
  // registration. The rows themselves come from assembly (initialize, or
  // the first step of a recruited rank) or, with static_matrix, from the
  // store's restore: A and b are static members, sent to the buddy once.
  void setup(fx::Context& ctx) override {
    const Params p = miniapps::resolved_params<Params>(ctx, kName, kDescription);
    abft_ = p.abft;
    static_matrix_ = p.static_matrix;
    packed_ = {};
    // Inside a block the progress line waits for the commit: an aborted
    // attempt's residual is not the run's.
    cg_ = std::make_unique<Cg>(p, ctx.rank(), ctx.size(), [this](const std::string& line) {
      if (scope_ != nullptr)
        progress_ = line;
      else
        fx::log::info("{}", line);
    });
    // The check runs after the halo fault point, i.e. after admission, so a
    // flip injected there is caught with a clean copy saved to retry from.
    cg_->on_halo([this, &ctx] {
      ctx.fault_point(fx::Phase::halo);
      if (scope_ != nullptr) check_state(*scope_, cg_->iteration());
    });
    auto& store = ctx.store();
    store.add("x", cg_->x());
    store.add("r", cg_->r());
    store.add("p", cg_->p_owned());
    store.add_scalar("rr", cg_->rr());
    store.add_scalar("norm_b", cg_->norm_b());
    store.add_scalar("iteration", cg_->iteration());
    store.add_scalar("solve_start", cg_->solve_start());
    if (static_matrix_) {
      // A and b as their packed image (what the buddy keeps: a fraction of
      // the CSR arrays), unpacked into the CSR Views when a restore brings it.
      store.add_static_member({"A_packed_rows",
                               [this] {
                                 auto& bytes = packed_.bytes();
                                 return std::make_pair(bytes.data(), bytes.size());
                               },
                               [this](std::size_t n) {
                                 packed_.bytes().resize(n);
                                 return packed_.bytes().data();
                               },
                               1, [this] { packed_.unpack(cg_->problem()); }});
      cg_->problem().for_each_halo_member([&](const char* name, auto& m) { store.add_static(name, m); });
    }
    // Checkpointed and saved at admission with the state they describe.
    if (abft_) store.add("abft_sums", sums_.data(), sums_.size());
  }

  void initialize(fx::Context& ctx) override {
    cg_->initialize(ctx.comm());
    pack_rows();
    if (abft_) take_sums(ctx);
  }

  void restored(fx::Context& ctx, const fx::RestoreInfo& info) override {
    miniapps::refuse_version_past_end<Params>(ctx, info, kName, kDescription, "max_iterations",
                                              cg_->params().iteration_limit());
  }

  // With static_matrix, a rank whose rows no restore brought (it died with
  // the rank holding their copy; a node-local or HDF5 restore; a resize)
  // assembles them again, and packs them for its buddy (the next commit
  // sends them); the CG state itself was restored.
  bool rebuild_static(fx::Context&, bool missing) override {
    if (missing && !cg_->problem().assembled()) {
      cg_->assemble();
      pack_rows();
    }
    return true;
  }

  // Spares ran out and the job goes on with fewer ranks: rows re-assembled
  // for the new size (static members describe the old decomposition), the CG state of the last checkpoint
  // re-distributed by node (resize.hpp). Dot products now have other partial sums, so the iterates agree with
  // the failure-free run to rounding.
  std::int64_t resize(fx::Context& ctx) override {
    setup(ctx);
    cg_->assemble();
    pack_rows();
    if (const auto it = miniapps::minife::restore_resized(ctx, *cg_)) return *it;
    initialize(ctx);
    return 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (it != cg_->iteration())
      FX_THROW(fx::Error, "minife: runtime iteration " + std::to_string(it) + " but restored state is at " +
                              std::to_string(cg_->iteration()));
    // A recruited rank whose rows no restore brought assembles them in this
    // step: their image then goes to its buddy with the re-protection after it.
    const bool assembles = !cg_->problem().assembled();
    const bool done = abft_ ? checked_step(ctx) : cg_->step(ctx.comm());
    if (assembles) pack_rows();
    return done;
  }

  void finish(fx::Context& ctx) override { miniapps::publish_results(ctx, cg_->results(ctx.comm())); }

 private:
  bool checked_step(fx::Context& ctx) {
    if (sums_size_ != ctx.size()) take_sums(ctx);  // a new process, or a resize that re-distributed the state
    bool done = false;
    progress_.clear();
    ctx.try_block("cg_iteration", [&](fx::TryScope& t) {
      scope_ = &t;  // the halo hook checks only inside this body
      struct Unbind {
        fx::TryScope*& slot;
        ~Unbind() { slot = nullptr; }
      } unbind{scope_};
      // A rank that found corruption still runs the iteration: the others
      // are in its collectives; the commit then aborts the block for all.
      done = cg_->step(ctx.comm());
      take_sums(ctx);
    });
    if (!progress_.empty()) fx::log::info("{}", progress_);
    return done;
  }

  // The image of rows this rank assembled, for its static member.
  void pack_rows() {
    if (static_matrix_ && cg_->problem().assembled()) packed_.pack(cg_->problem());
  }

  using Sums = std::array<std::uint64_t, 4>;
  static constexpr std::array<const char*, 4> kSummed = {"x", "r", "p", "the scalars rr, norm_b, iteration"};

  Sums state_sums() {
    return {bit_sum(cg_->x()), bit_sum(cg_->r()), bit_sum(cg_->p_owned()),
            bits_of(cg_->rr()) + bits_of(cg_->norm_b()) + bits_of(cg_->iteration())};
  }

  void take_sums(const fx::Context& ctx) {
    sums_ = state_sums();
    sums_size_ = ctx.size();
  }

  // The state must be what the last committed iteration left (or what was
  // restored with its sums); anything else is a soft error.
  void check_state(fx::TryScope& t, std::int64_t iteration) {
    const Sums now = state_sums();
    for (std::size_t k = 0; k < now.size(); ++k) {
      if (now[k] == sums_[k]) continue;
      fx::log::warn(
          "minife ABFT: state checksum of {} does not match on rank {} at iteration {} (attempt {}: {} "
          "instead of {}): asserting incorrect_result in TryBlock 'cg_iteration'",
          kSummed[k], t.rank(), iteration, t.attempt(), miniapps::hex64(now[k]), miniapps::hex64(sums_[k]));
      t.raise_error(fx::TryError::incorrect_result);
      return;
    }
  }

  std::unique_ptr<Cg> cg_;
  bool abft_ = false;
  bool static_matrix_ = true;
  miniapps::minife::PackedRows packed_;  // A and b as the store sends them (static_matrix)
  Sums sums_{};                          // of the state the last committed iteration left
  // The job size sums_ were taken at (0: never, in this process). A resize
  // re-distributes x, r, p by rows without them; a store restore brings
  // them along.
  int sums_size_ = 0;
  fx::TryScope* scope_ = nullptr;  // the running cg_iteration block, if any
  std::string progress_;           // progress line held until the commit
};

}  // namespace

int main(int argc, char** argv) {
  Params defaults;
  if (auto code = miniapps::preflight_cli(defaults.declare(), kName, kDescription, argc, argv)) return *code;
  return fx::run<MinifeApp>(argc, argv);
}
