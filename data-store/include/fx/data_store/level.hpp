#pragma once
/// \file
/// Where a checkpoint went or came from, as run reports name it.
#include <fx/enum_names.hpp>

namespace fx {

/// commit: memory (in-memory levels only), node (memory and node-local
/// storage) or hdf5 (memory and disk, node-local too when both were due);
/// restore: memory, node, hdf5, or none (nothing restored).
enum class CheckpointLevel { none, memory, node, hdf5 };

}  // namespace fx

FX_ENUM_NAMES(fx::CheckpointLevel, {fx::CheckpointLevel::none, "none"},
              {fx::CheckpointLevel::memory, "memory"}, {fx::CheckpointLevel::node, "node"},
              {fx::CheckpointLevel::hdf5, "hdf5"})
