#pragma once
// Checkpoint file and directory names, and flushing them to stable storage
// (paths.cpp: shared by the store and the HDF5 plugin).
#include <cstdint>
#include <filesystem>
#include <string>

namespace fx::detail {

std::string version_dir_name(std::int64_t iteration);
std::string rank_file_name(int rank);
// Flush a file or directory to stable storage; throws CheckpointError.
void sync_path(const std::filesystem::path& p, bool directory);

}  // namespace fx::detail
