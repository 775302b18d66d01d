#pragma once
#include <string>

namespace fx {

struct MemoryCheckpointConfig {
  int every = 0;                   // commit every k iterations (0: off)
  int buddy_distance = 1;          // buddy of logical rank r holds r's copy: r + distance
  std::string scheme = "buddy";    // buddy | parity
  int parity_group = 4;            // parity: ranks per XOR group (>= 2; the last group takes the rest)
  int depth = 2;                   // versions kept
};

struct Hdf5CheckpointConfig {
  int every = 0;                   // every m-th memory commit also to disk (0: off)
  std::string directory = "fx-checkpoints";
  int keep = 2;                    // complete versions retained
  bool restart = true;             // cold restart from the newest valid version
  // Versions exist on disk but none is usable (corrupted, truncated, missing
  // rank files, other rank count): "fresh" starts from scratch, "stop"
  // throws fx::CheckpointError on every rank.
  std::string on_unusable = "fresh";
};

struct CheckpointConfig {
  MemoryCheckpointConfig memory;
  Hdf5CheckpointConfig hdf5;
};

}  // namespace fx
