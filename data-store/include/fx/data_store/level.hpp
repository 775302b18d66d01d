#pragma once
// Where a checkpoint went or came from, as run reports name it.
#include <fx/enum_names.hpp>

namespace fx {

// commit: memory (in-memory levels only) or hdf5 (memory and disk);
// restore: memory, hdf5, or none (nothing restored).
enum class CheckpointLevel { none, memory, hdf5 };

}  // namespace fx

FX_ENUM_NAMES(fx::CheckpointLevel, {fx::CheckpointLevel::none, "none"},
              {fx::CheckpointLevel::memory, "memory"}, {fx::CheckpointLevel::hdf5, "hdf5"})
