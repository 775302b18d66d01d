#include "manifest.hpp"

#include <fx/detail/files.hpp>
#include <fx/error.hpp>
#include <fx/log.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

namespace fx::detail {
namespace fs = std::filesystem;

namespace {

constexpr const char* kFormatName = "fx-checkpoint";

template <class T>
T field(const YAML::Node& node, const char* key, const std::string& path) {
  // operator[] on a scalar or a sequence throws yaml-cpp's own exception.
  if (!node.IsMap()) {
    FX_THROW(CheckpointError, fmt::format("{}:{}:{}: expected a mapping with '{}'", path,
                                          node.Mark().line + 1, node.Mark().column + 1, key));
  }
  const YAML::Node v = node[key];
  if (!v) FX_THROW(CheckpointError, fmt::format("{}: manifest has no '{}'", path, key));
  try {
    return v.as<T>();
  } catch (const YAML::Exception&) {
    FX_THROW(CheckpointError, fmt::format("{}:{}:{}: '{}' has a bad value '{}'", path, v.Mark().line + 1,
                                          v.Mark().column + 1, key, v.Scalar()));
  }
}

// The names fx writes (rank-000003.h5, partner-000003.img): letters,
// digits, '.', '_' and '-', never "." or ".." (no other directory, no byte
// that would not read back the same).
bool plain_file_name(const std::string& name) {
  if (name.empty() || name == "." || name == "..") return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  });
}

void make_dir(const fs::path& p) {
  if (::mkdir(p.c_str(), 0750) == 0) return;
  if (errno == EEXIST && fs::is_directory(p)) return;
  FX_THROW(CheckpointError,
           fmt::format("cannot create checkpoint directory {}: {}", p.string(), errno_text(errno)));
}

// A directory fx names inside the user's (a version, the quarantine): a
// link or anything else already there is refused, never followed.
void make_own_dir(const fs::path& p) {
  const std::string why = make_directory(p.string(), 0750);
  if (!why.empty())
    FX_THROW(CheckpointError, fmt::format("cannot create checkpoint directory {}: {}", p.string(), why));
}

}  // namespace

std::optional<std::int64_t> parse_version_dir(const std::string& name) {
  constexpr std::string_view prefix = "iter-";
  if (name.size() <= prefix.size() || name.compare(0, prefix.size(), prefix) != 0) return std::nullopt;
  std::int64_t v = 0;
  for (std::size_t i = prefix.size(); i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || v > (INT64_MAX - 9) / 10) return std::nullopt;
    v = v * 10 + (name[i] - '0');
  }
  return v;
}

std::string format_manifest(const Manifest& m) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "format" << YAML::Value << kFormatName;
  out << YAML::Key << "format_version" << YAML::Value << m.format_version;
  out << YAML::Key << "iteration" << YAML::Value << m.iteration;
  out << YAML::Key << "sequence" << YAML::Value << m.sequence;
  out << YAML::Key << "rank_count" << YAML::Value << m.rank_count;
  out << YAML::Key << "files" << YAML::Value << YAML::BeginSeq;
  for (const auto& f : m.files) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "rank" << YAML::Value << f.rank;
    out << YAML::Key << "file" << YAML::Value << f.file;
    out << YAML::Key << "bytes" << YAML::Value << f.bytes;
    out << YAML::Key << "xxh3" << YAML::Value << fmt::format("{:016x}", f.checksum);
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}

namespace {

// The manifest's YAML: a mapping in fx's format.
YAML::Node manifest_root(const std::string& text, const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    FX_THROW(CheckpointError, fmt::format("{}:{}:{}: {}", path, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
  if (!root.IsMap()) FX_THROW(CheckpointError, fmt::format("{}: not a manifest (expected a mapping)", path));
  if (field<std::string>(root, "format", path) != kFormatName) {
    FX_THROW(CheckpointError, fmt::format("{}: format is not '{}'", path, kFormatName));
  }
  return root;
}

// 'files' is a list of rank_count entries (every_rank), or of no more.
void check_file_count(const YAML::Node& files, int rank_count, bool every_rank, const std::string& path) {
  const std::size_t entries = files && files.IsSequence() ? files.size() : 0;
  if (rank_count < 1 || !files || !files.IsSequence() ||
      (every_rank ? entries != static_cast<std::size_t>(rank_count)
                  : entries > static_cast<std::size_t>(rank_count))) {
    FX_THROW(CheckpointError, fmt::format("{}: rank_count {} does not match the {} entries of 'files'", path,
                                          rank_count, entries));
  }
}

// One entry of 'files'; its rank must be in range and not in `seen` yet.
ManifestEntry parse_entry(const YAML::Node& f, int rank_count, std::set<int>& seen, const std::string& path) {
  ManifestEntry e;
  e.rank = field<int>(f, "rank", path);
  e.file = field<std::string>(f, "file", path);
  e.bytes = field<std::uint64_t>(f, "bytes", path);
  const auto hex = field<std::string>(f, "xxh3", path);
  char* end = nullptr;
  e.checksum = std::strtoull(hex.c_str(), &end, 16);
  if (hex.empty() || *end != '\0') FX_THROW(CheckpointError, fmt::format("{}: bad xxh3 '{}'", path, hex));
  if (e.rank < 0 || e.rank >= rank_count || !seen.insert(e.rank).second) {
    FX_THROW(CheckpointError, fmt::format("{}: rank {} is out of range or listed twice", path, e.rank));
  }
  if (!plain_file_name(e.file)) {
    FX_THROW(CheckpointError, fmt::format("{}: bad file name '{}' for rank {}", path, e.file, e.rank));
  }
  return e;
}

}  // namespace

Manifest parse_manifest(const std::string& text, const std::string& path, bool every_rank) {
  const YAML::Node root = manifest_root(text, path);
  Manifest m;
  m.format_version = field<int>(root, "format_version", path);
  if (m.format_version != kDiskFormat) {
    FX_THROW(CheckpointError,
             fmt::format("{}: format_version {} (this build reads {})", path, m.format_version, kDiskFormat));
  }
  m.iteration = field<std::int64_t>(root, "iteration", path);
  m.sequence = field<std::int64_t>(root, "sequence", path);
  m.rank_count = field<int>(root, "rank_count", path);
  const YAML::Node files = root["files"];
  check_file_count(files, m.rank_count, every_rank, path);
  if (every_rank) m.files.resize(static_cast<std::size_t>(m.rank_count));
  // A set, not a flag per rank: a marker lists a few of rank_count ranks,
  // and a damaged rank_count must not size an allocation.
  std::set<int> seen;
  for (const auto& f : files) {
    ManifestEntry e = parse_entry(f, m.rank_count, seen, path);
    if (every_rank)
      m.files[static_cast<std::size_t>(e.rank)] = e;
    else
      m.files.push_back(e);
  }
  return m;
}

Manifest read_manifest(const fs::path& file, bool every_rank) {
  std::ifstream in(file);
  if (!in) FX_THROW(CheckpointError, fmt::format("{}: cannot open: {}", file.string(), errno_text(errno)));
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_manifest(ss.str(), file.string(), every_rank);
}

void write_file_durably(const fs::path& file, const void* data, std::size_t n) {
  const std::string why =
      write_replacing(file.string(), std::string_view(static_cast<const char*>(data), n), 0640, true);
  if (!why.empty()) FX_THROW(CheckpointError, fmt::format("cannot write {}: {}", file.string(), why));
}

void write_manifest(const fs::path& dir, const Manifest& m, const std::string& name) {
  const std::string text = format_manifest(m);
  write_file_durably(dir / name, text.data(), text.size());
  sync_path(dir, true);
}

std::vector<VersionDir> list_versions(const fs::path& root) {
  std::vector<VersionDir> out;
  std::error_code ec;
  for (fs::directory_iterator it(root, ec), end; !ec && it != end; it.increment(ec)) {
    const auto it_num = parse_version_dir(it->path().filename().string());
    if (!it_num || !it->is_directory(ec)) continue;
    out.push_back({*it_num, it->path(), fs::exists(it->path() / kManifestName, ec)});
  }
  std::sort(out.begin(), out.end(),
            [](const VersionDir& a, const VersionDir& b) { return a.iteration > b.iteration; });
  return out;
}

namespace {

// A name under root/quarantine/ for `path` that nothing holds yet.
fs::path free_aside_name(const fs::path& aside, const fs::path& path) {
  fs::path to = aside / path.filename();
  std::error_code ec;
  for (int i = 1; fs::exists(fs::symlink_status(to, ec)); ++i)
    to = aside / (path.filename().string() + "." + std::to_string(i));
  return to;
}

// A file (or link, FIFO, ...) aside by a second name, then the first name
// dropped: never a directory (link() refuses one). Ranks sharing the
// directory race here: a rank that finds the name gone, or already a
// directory (another rank moved the file and made its version there),
// leaves it; a plain rename would have moved that live version aside.
std::optional<fs::path> move_file_aside(const fs::path& aside, const fs::path& path) {
  for (int attempt = 0; attempt < 100; ++attempt) {
    const fs::path to = free_aside_name(aside, path);
    if (::linkat(AT_FDCWD, path.c_str(), AT_FDCWD, to.c_str(), 0) != 0) {
      const int err = errno;
      if (err == EEXIST) continue;                             // that name was just taken
      if (err == ENOENT || err == EPERM) return std::nullopt;  // gone, or a directory now
      FX_THROW(CheckpointError,
               fmt::format("cannot move {} aside to {}: {}", path.string(), to.string(), errno_text(err)));
    }
    if (::unlink(path.c_str()) != 0 && errno != ENOENT && errno != EISDIR) {
      FX_THROW(CheckpointError,
               fmt::format("cannot move {} aside to {}: {}", path.string(), to.string(), errno_text(errno)));
    }
    return to;
  }
  FX_THROW(CheckpointError,
           fmt::format("cannot move {} aside: no free name in {}", path.string(), aside.string()));
}

// root/quarantine/, made when missing.
fs::path quarantine_dir(const fs::path& root) {
  const fs::path aside = root / "quarantine";
  make_own_dir(aside);
  return aside;
}

}  // namespace

fs::path make_version_dir(const fs::path& root, std::int64_t iteration) {
  fs::path partial;
  for (const auto& part : root) {
    partial /= part;
    if (partial == partial.root_path()) continue;
    make_dir(partial);
  }
  const fs::path dir = root / version_dir_name(iteration);
  // Something else under a version's name (a file, a link) is not ours to
  // remove, nor a reason to fail the commit: it goes aside. Never as a
  // directory: by now that is the version a rank sharing root has made.
  std::error_code ec;
  const auto st = fs::symlink_status(dir, ec);
  if (!ec && fs::exists(st) && !fs::is_directory(st)) {
    if (const auto to = move_file_aside(quarantine_dir(root), dir))
      log::warn("moved {} aside to {}: not a version directory, in the way of iteration {}", dir.string(),
                to->string(), iteration);
  }
  make_own_dir(dir);
  return dir;
}

std::optional<fs::path> move_aside(const fs::path& root, const fs::path& path) {
  const fs::path aside = quarantine_dir(root);
  std::error_code ec;
  const auto st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return std::nullopt;  // another rank sharing the directory moved it
  if (!fs::is_directory(st)) return move_file_aside(aside, path);
  const fs::path to = free_aside_name(aside, path);
  std::error_code err;
  fs::rename(path, to, err);
  if (!err) return to;
  // Another rank sharing the directory moved it first.
  if (!fs::exists(fs::symlink_status(path, ec))) return std::nullopt;
  FX_THROW(CheckpointError,
           fmt::format("cannot move {} aside to {}: {}", path.string(), to.string(), err.message()));
}

std::vector<fs::path> retire_versions(const fs::path& root, std::int64_t current, int keep) {
  std::vector<fs::path> retired;
  int kept = 0;
  for (const auto& v : list_versions(root)) {
    if (v.iteration > current) continue;
    if (v.complete && kept < std::max(keep, 1)) {
      ++kept;
      continue;
    }
    std::error_code ec;
    fs::remove(v.path / kManifestName, ec);
    retired.push_back(v.path);
  }
  return retired;
}

std::vector<fs::path> rank_files_below(const fs::path& root, std::int64_t current, int rank) {
  std::vector<fs::path> files;
  for (const auto& v : list_versions(root)) {
    if (v.iteration >= current || v.complete) continue;
    files.push_back(v.path / rank_file_name(rank));
    // and its temporaries ("<file>.tmp.XXXXXX", create_temp_beside)
    const std::string tmp = rank_file_name(rank) + ".tmp";
    std::error_code it_ec;
    for (fs::directory_iterator it(v.path, it_ec), end; !it_ec && it != end; it.increment(it_ec))
      if (it->path().filename().string().rfind(tmp, 0) == 0) files.push_back(it->path());
  }
  return files;
}

void remove_files(const std::vector<fs::path>& files) {
  for (const auto& f : files) {
    std::error_code ec;
    fs::remove(f, ec);
  }
}

void remove_rank_files(const fs::path& root, std::int64_t current, int rank) {
  remove_files(rank_files_below(root, current, rank));
}

void remove_dirs(const std::vector<fs::path>& dirs) {
  for (const auto& d : dirs) {
    std::error_code ec;
    fs::remove_all(d, ec);
  }
}

std::vector<std::pair<fs::path, fs::path>> quarantine_versions_above(const fs::path& root,
                                                                     std::int64_t iteration) {
  std::vector<std::pair<fs::path, fs::path>> moved;
  for (const auto& v : list_versions(root)) {
    if (v.iteration <= iteration) continue;
    if (const auto to = move_aside(root, v.path)) moved.emplace_back(v.path, *to);
  }
  return moved;
}

void set_aside_newer_versions(const fs::path& root, std::int64_t iteration) {
  for (const auto& [from, to] : quarantine_versions_above(root, iteration)) {
    log::warn("moved HDF5 version {} aside to {}: newer than the restored one (abandoned or unusable)",
              from.string(), to.string());
  }
}

}  // namespace fx::detail
