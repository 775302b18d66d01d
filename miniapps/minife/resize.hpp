#pragma once
// minife after a shrink (fx app only): the CG state of the last checkpoint,
// written by the old ranks, re-distributed by node rows onto the new
// decomposition. The Cg object is already built (rows re-assembled) for
// ctx.size() ranks.
#include <miniapps/regrid.hpp>

#include <fx/fx.hpp>

#include <Kokkos_Core.hpp>

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "minife.hpp"

namespace miniapps::minife {

// Fills x, r, p (by node: the old ranks whose node blocks overlap this
// rank's new block) and the scalars rr, norm_b, iteration, solve_start.
// Returns the iteration to resume at, or nullopt when nothing was ever
// checkpointed (start afresh). Collective.
template <class Cg>
std::optional<std::int64_t> restore_resized(fx::Context& ctx, Cg& cg) {
  const Problem& a = cg.problem();
  using Host = Kokkos::View<double*, Kokkos::HostSpace>;
  const std::array<std::pair<const char*, Host>, 3> vectors{{{"x", Host("minife_x_prior", a.n_own)},
                                                             {"r", Host("minife_r_prior", a.n_own)},
                                                             {"p", Host("minife_p_prior", a.n_own)}}};
  Decomp3 old;
  const auto version = ctx.store().restore_resized(
      [&](const fx::PriorVersion& v) {
        old = Decomp3(v.size, a.decomp.global());
        return overlapping_ranks(old, a.box);
      },
      [&](const fx::PriorPiece& piece) {
        const Box box = old.box(piece.rank());
        for (const auto& [name, dst] : vectors) {
          std::size_t count = 0;
          const double* src = piece.data<double>(name, &count);
          if (count != static_cast<std::size_t>(box.volume()))
            FX_THROW(fx::CheckpointError, std::string("minife: old rank ") + std::to_string(piece.rank()) +
                                              "'s " + name + " has " + std::to_string(count) +
                                              " rows, its node block " + std::to_string(box.volume()));
          copy_overlap(box, src, 0, a.box, dst.data(), 0);
        }
        cg.rr() = piece.scalar<double>("rr");
        cg.norm_b() = piece.scalar<double>("norm_b");
        cg.iteration() = piece.scalar<std::int64_t>("iteration");
        cg.solve_start() = piece.scalar<double>("solve_start");
      });
  if (!version) return std::nullopt;
  Kokkos::deep_copy(cg.x(), vectors[0].second);
  Kokkos::deep_copy(cg.r(), vectors[1].second);
  Kokkos::deep_copy(cg.p_owned(), vectors[2].second);
  return version->iteration;
}

}  // namespace miniapps::minife
