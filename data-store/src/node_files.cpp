#include "node_files.hpp"

#include <fx/detail/files.hpp>
#include <fx/error.hpp>
#include <fx/log.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "image.hpp"
#include "manifest.hpp"

namespace fx::detail {
namespace fs = std::filesystem;
namespace {

constexpr std::string_view kMarkerSuffix = ".marker";

void map_file(const NodeFile& f, Buffer& into) {
  const int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    FX_THROW(CheckpointError, fmt::format("cannot open {}: {}", f.path.string(), errno_text(errno)));
  const bool mapped = into.map_file(fd, f.bytes);
  const int err = errno;
  ::close(fd);
  if (!mapped) FX_THROW(CheckpointError, fmt::format("cannot map {}: {}", f.path.string(), errno_text(err)));
}

}  // namespace

std::string own_file(int rank) { return fmt::format("rank-{:06d}.img", rank); }
std::string partner_file(int rank) { return fmt::format("partner-{:06d}.img", rank); }
std::string marker_file(int rank) { return fmt::format("rank-{:06d}{}", rank, kMarkerSuffix); }

bool is_marker(const fs::path& p) {
  const std::string name = p.filename().string();
  return name.size() > kMarkerSuffix.size() &&
         name.compare(name.size() - kMarkerSuffix.size(), kMarkerSuffix.size(), kMarkerSuffix) == 0;
}

std::vector<NodeFile> scan_node_files(const fs::path& root, int ranks, bool same) {
  std::vector<NodeFile> out;
  for (const auto& v : list_versions(root)) {
    std::error_code ec;
    for (fs::directory_iterator it(v.path, ec), end; !ec && it != end; it.increment(ec)) {
      if (!is_marker(it->path())) continue;
      try {
        const Manifest m = read_manifest(it->path(), false);
        if (m.iteration != v.iteration || (m.rank_count == ranks) != same) continue;
        for (const auto& f : m.files) {
          const fs::path p = v.path / f.file;
          std::error_code size_ec;
          if (fs::file_size(p, size_ec) != f.bytes || size_ec) {
            log::debug("node level: {} is missing or not {} bytes", p.string(), f.bytes);
            continue;
          }
          out.push_back({m.iteration, m.sequence, m.rank_count, f.rank, f.file.rfind("rank-", 0) == 0, p,
                         f.bytes, f.checksum});
        }
      } catch (const CheckpointError& e) {
        log::debug("node level: skipping a marker: {}", e.what());
      }
    }
  }
  return out;
}

void load_node_file(const NodeFile& f, Buffer& into) {
  map_file(f, into);
  const ImageInfo info = read_header(into.data(), f.bytes, f.bytes, f.path.string());
  if (info.iteration != f.iteration || info.rank != f.rank || info.digest() != f.checksum) {
    FX_THROW(CheckpointError,
             fmt::format("{}: holds iteration {} of rank {} (digest {:016x}); its marker names "
                         "iteration {} of rank {} ({:016x})",
                         f.path.string(), info.iteration, info.rank, info.digest(), f.iteration, f.rank,
                         f.checksum));
  }
}

}  // namespace fx::detail
