#pragma once
/// \file
/// Where a checkpoint went or came from, as run reports name it.
#include <fx/enum_names.hpp>

#include <cstdint>
#include <string>

namespace fx {

/// commit: memory (in-memory levels only), node (memory and node-local
/// storage) or hdf5 (memory and disk, node-local too when both were due);
/// restore: memory, node, hdf5, or none (nothing restored).
enum class CheckpointLevel { none, memory, node, hdf5 };

/// A version a restore tried and passed over for an older one.
struct SkippedVersion {
  CheckpointLevel level = CheckpointLevel::none;  ///< where it was
  std::int64_t iteration = -1;                    ///< its iteration
  std::string why;                                ///< what failed (the log names the rank and the check)
};

}  // namespace fx

FX_ENUM_NAMES(fx::CheckpointLevel, {fx::CheckpointLevel::none, "none"},
              {fx::CheckpointLevel::memory, "memory"}, {fx::CheckpointLevel::node, "node"},
              {fx::CheckpointLevel::hdf5, "hdf5"})
