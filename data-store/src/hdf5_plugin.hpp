#pragma once
// The HDF5 level's file I/O (hdf5_file.cpp) is a plugin, libfx_hdf5.so,
// loaded on first use: a process that never reads or writes an HDF5
// checkpoint does not map HDF5 and what Debian's HDF5 links (curl, TLS,
// Kerberos, LDAP: about 6 MB resident per process, 14 % of miniFE's
// footprint at 64^3 on 4 ranks).
#include <fx/data_store/member.hpp>

#include <cstdint>
#include <filesystem>
#include <vector>

#include "buffer.hpp"
#include "image.hpp"
#include "manifest.hpp"

namespace fx::detail {

// The plugin's functions (hdf5_file.hpp), one table per plugin.
struct Hdf5Api {
  int version;
  std::uint64_t (*write_rank_file)(const std::filesystem::path& dir, const ImageInfo& info,
                                   const std::byte* image);
  ImageInfo (*read_rank_file)(const std::filesystem::path& dir, const Manifest& manifest, int rank,
                              const std::vector<Member>& members, Buffer& image);
  ImageInfo (*read_rank_file_as_written)(const std::filesystem::path& dir, const Manifest& manifest, int rank,
                                         Buffer& image);
};
constexpr int kHdf5ApiVersion = 2;  // 2: Member has shape and reshape (fx::resizable)
constexpr const char* kHdf5ApiSymbol = "fx_hdf5_api";

// Loads the plugin (kept loaded for the process): $FX_HDF5_PLUGIN, else
// the build tree's, else the configured install prefix's. Throws
// CheckpointError naming every path tried and why each failed.
const Hdf5Api& load_hdf5_plugin();

}  // namespace fx::detail
