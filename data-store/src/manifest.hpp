#pragma once
// The on-disk layout of the HDF5 level, without HDF5 itself:
//
//   <directory>/iter-000000000040/rank-000003.h5   one file per rank
//   <directory>/iter-000000000040/manifest.yaml    written last, by rank 0,
//                                                  after every rank's file is in place
//
// A version is complete when its manifest exists; retention and cold
// restart look only at complete versions.
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "paths.hpp"

namespace fx::detail {

constexpr int kDiskFormat = 1;
constexpr const char* kManifestName = "manifest.yaml";

struct ManifestEntry {
  int rank = -1;
  std::string file;            // relative to the version directory
  std::uint64_t bytes = 0;     // file size: catches truncation before HDF5 is opened
  std::uint64_t checksum = 0;  // the image digest (hash over the member hashes)
};

struct Manifest {
  int format_version = kDiskFormat;
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;
  int rank_count = 0;
  std::vector<ManifestEntry> files;  // index = rank
};

std::string format_manifest(const Manifest& m);
// Throws CheckpointError naming `path` (and line:column for YAML errors).
// `every_rank`: `files` lists ranks 0..rank_count-1 (an HDF5 manifest),
// else any of them once (a node-level marker: the files one rank holds).
Manifest parse_manifest(const std::string& text, const std::string& path, bool every_rank = true);
Manifest read_manifest(const std::filesystem::path& file, bool every_rank = true);
// Temporary name, fsync, rename, fsync of the directory, which also makes
// the ranks' renamed files durable. (Should a crash keep the manifest and
// lose a rank file, cold restart finds the file missing and skips the
// version.)
void write_manifest(const std::filesystem::path& version_dir, const Manifest& m,
                    const std::string& name = kManifestName);
// `n` bytes to `file` under a temporary name, owner rw / group r, fsync'ed,
// renamed (the directory is not synced). Throws CheckpointError naming it.
void write_file_durably(const std::filesystem::path& file, const void* data, std::size_t n);

std::optional<std::int64_t> parse_version_dir(const std::string& name);

struct VersionDir {
  std::int64_t iteration = -1;
  std::filesystem::path path;
  bool complete = false;  // has a manifest
};
// Version directories under root, newest first (none when root is missing).
std::vector<VersionDir> list_versions(const std::filesystem::path& root);

// Create root and a version directory (owner rwx, group rx): files are
// never world-writable.
std::filesystem::path make_version_dir(const std::filesystem::path& root, std::int64_t iteration);

// Retention after version `current` became complete, in three steps so
// that no rank deletes the others' files (a file system may take long to
// free large files; the ranks do it in parallel):
// 1. rank 0: versions below `current` beyond the newest `keep` complete
//    ones lose their manifest (they are incomplete from then on);
//    returns the incomplete directories below `current`.
std::vector<std::filesystem::path> retire_versions(const std::filesystem::path& root, std::int64_t current,
                                                   int keep);
// 2. every rank: its own file (and temporary) in incomplete versions below
//    `current`: found (rank_files_below), then removed (remove_files), or
//    both at once.
std::vector<std::filesystem::path> rank_files_below(const std::filesystem::path& root, std::int64_t current,
                                                    int rank);
void remove_files(const std::vector<std::filesystem::path>& files);
void remove_rank_files(const std::filesystem::path& root, std::int64_t current, int rank);
// 3. rank 0: what is left of directories retired one cycle earlier.
void remove_dirs(const std::vector<std::filesystem::path>& dirs);
// Moves `path` (under root) to root/quarantine/, never deleted: kept for
// inspection; a name already there gets a .1, .2, ... suffix. Returns
// where it went, nullopt when it was gone already (another rank of the
// host moved it); throws CheckpointError when it cannot be moved.
std::optional<std::filesystem::path> move_aside(const std::filesystem::path& root,
                                                const std::filesystem::path& path);
// Versions newer than `iteration` (abandoned or unusable) move to
// root/quarantine/ (never read again, kept for inspection); returns each
// (from, to). A name already there gets a .1, .2, ... suffix.
std::vector<std::pair<std::filesystem::path, std::filesystem::path>> quarantine_versions_above(
    const std::filesystem::path& root, std::int64_t iteration);
// The same, with a warning naming each version and where it went.
void set_aside_newer_versions(const std::filesystem::path& root, std::int64_t iteration);

}  // namespace fx::detail
