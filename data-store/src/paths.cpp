#include "paths.hpp"

#include <fx/detail/files.hpp>
#include <fx/error.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstring>

namespace fx::detail {

std::string version_dir_name(std::int64_t iteration) { return fmt::format("iter-{:012d}", iteration); }
std::string rank_file_name(int rank) { return fmt::format("rank-{:06d}.h5", rank); }

void sync_path(const std::filesystem::path& p, bool directory) {
  const int fd = ::open(p.c_str(), O_RDONLY | (directory ? O_DIRECTORY : 0));
  if (fd < 0 || ::fsync(fd) != 0) {
    const int err = errno;
    if (fd >= 0) ::close(fd);
    FX_THROW(CheckpointError, fmt::format("cannot fsync {}: {}", p.string(), errno_text(err)));
  }
  ::close(fd);
}

}  // namespace fx::detail
