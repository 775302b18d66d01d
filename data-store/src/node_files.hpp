#pragma once
// The node-local level's files on one host, without MPI: the names, the
// scan of what the markers name, and the loader that maps an image and
// checks it against its marker (also what fuzz/node_files.cpp feeds bytes).
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "buffer.hpp"

namespace fx::detail {

// An image file a marker in this rank's node-local directory names.
struct NodeFile {
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;
  int ranks = 0;     // the job size that wrote it
  int rank = -1;     // whose image
  bool own = false;  // written by that rank (else a partner copy)
  std::filesystem::path path;
  std::uint64_t bytes = 0;
  std::uint64_t checksum = 0;
};

std::string own_file(int rank);
std::string partner_file(int rank);
std::string marker_file(int rank);
bool is_marker(const std::filesystem::path& p);

// Every image a marker names, present with the size it names, of versions
// written by `ranks` ranks (`same`), or by any other number (`!same`).
// A marker that does not parse is skipped (logged at debug level).
std::vector<NodeFile> scan_node_files(const std::filesystem::path& root, int ranks, bool same = true);

// The file's image mapped into `into` (not read: a rank's own image is
// unpacked and a partner copy sent straight from the page cache), its
// header checked against its marker. Throws CheckpointError naming the
// file and the field.
void load_node_file(const NodeFile& f, Buffer& into);

}  // namespace fx::detail
