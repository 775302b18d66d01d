#pragma once
/// \file
/// The spares' settings as typed choices (spares.idle, spares.placement in
/// the configuration); one enum each for the configuration and the spares.
#include <fx/enum_names.hpp>

namespace fx {

/// How an idle spare waits: MPI_Test then nanosleep (`sleep`), a
/// sched_yield poll (`yield`), or a blocking wait inside MPI (`block`).
enum class SpareIdle { block, yield, sleep };
/// Which world ranks are spares: the last S (`last`), or spread evenly over
/// the nodes, each node giving up its last processes (`spread`).
enum class SparePlacement { last, spread };

}  // namespace fx

FX_ENUM_NAMES(fx::SpareIdle, {fx::SpareIdle::block, "block"}, {fx::SpareIdle::yield, "yield"},
              {fx::SpareIdle::sleep, "sleep"})
FX_ENUM_NAMES(fx::SparePlacement, {fx::SparePlacement::last, "last"}, {fx::SparePlacement::spread, "spread"})
