#pragma once
// One rank's HDF5 checkpoint file (in the plugin libfx_hdf5.so: the data
// store calls these through load_hdf5_plugin(), hdf5_plugin.hpp): a dataset per member with its type,
// layout, extents, size and checksum (named after its kind: xxh3 or mix64)
// as attributes; the file carries
// the format version, iteration, sequence, rank, rank count and member names.
#include <fx/data_store/member.hpp>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "buffer.hpp"
#include "image.hpp"
#include "manifest.hpp"

namespace fx::detail {

// Write `image` (described by info) as dir/rank-<rank>.h5: a temporary
// name, flushed, fsync'ed, made read-only for others, renamed (the
// directory is fsync'ed by write_manifest, after the manifest). Returns the file size. Throws
// CheckpointError naming the file.
std::uint64_t write_rank_file(const std::filesystem::path& dir, const ImageInfo& info,
                              const std::byte* image);

// Read dir/<expect.file> back into `image` and check everything against the
// manifest and the registered members: size, attributes, member set,
// per-dataset checksums, digest. Throws CheckpointError naming the file and
// what is wrong with it.
ImageInfo read_rank_file(const std::filesystem::path& dir, const Manifest& manifest, int rank,
                         const std::vector<Member>& members, Buffer& image);

// The same checks against the manifest, but the member table comes from the
// file: a version written under another decomposition (after a shrink).
ImageInfo read_rank_file_as_written(const std::filesystem::path& dir, const Manifest& manifest, int rank,
                                    Buffer& image);

}  // namespace fx::detail
