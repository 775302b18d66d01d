#pragma once
/// \file
/// One clock for every fx timing: CLOCK_MONOTONIC is shared by all processes
/// of a node, so a victim's kill stamp and a survivor's detection stamp compare.
#include <cstdint>

namespace fx {
/// Seconds since an arbitrary, node-wide fixed point.
/// \return CLOCK_MONOTONIC in seconds (nanosecond resolution): comparable between the
///   processes of one node, not between nodes
double now();
}  // namespace fx
