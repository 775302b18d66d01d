#pragma once
#include <string>

namespace fx {

struct MemoryCheckpointConfig {
  int every = 0;                   // commit every k iterations (0: off)
  int buddy_distance = 1;          // buddy of logical rank r holds r's copy: r + distance
  std::string scheme = "buddy";    // buddy | parity
  int parity_group = 4;
  int depth = 2;                   // versions kept
};

struct Hdf5CheckpointConfig {
  int every = 0;                   // every m-th memory commit also to disk (0: off)
  std::string directory = "fx-checkpoints";
  int keep = 2;                    // complete versions retained
  bool restart = true;             // cold restart from the newest valid version
};

struct CheckpointConfig {
  MemoryCheckpointConfig memory;
  Hdf5CheckpointConfig hdf5;
};

}  // namespace fx
