#include "dir_claim.hpp"

#include <fx/detail/files.hpp>
#include <fx/error.hpp>
#include <fx/log.hpp>

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>
#include <vector>

namespace fx::detail {
namespace fs = std::filesystem;

namespace {

constexpr const char* kClaims = ".fx-jobs";  // under the claimed directory
constexpr const char* kNew = ".new-";        // a claim not yet locked
constexpr std::size_t kSuffix = 7;           // "-XXXXXX" of mkostemp
constexpr double kNewGraceS = 60;            // an unlocked new claim older than this is a dead one's

std::string file_safe(std::string s) {
  for (char& c : s)
    if (std::isalnum(static_cast<unsigned char>(c)) == 0 && c != '-' && c != '_' && c != '.') c = '_';
  return s;
}

// The job a claim file names, "" when the name is none of ours.
std::string job_of(const std::string& name) {
  const std::string ext = ".lock";
  if (name.size() <= ext.size() + kSuffix || name.compare(name.size() - ext.size(), ext.size(), ext) != 0)
    return "";
  return name.substr(0, name.size() - ext.size() - kSuffix);
}

// The environment variable that sets `key` (docs/config.md).
std::string env_name(const std::string& key) {
  std::string out = "FX_CFG_";
  for (const char c : key) {
    if (c == '.')
      out += "__";
    else
      out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  return out;
}

double age_s(const fs::path& p) {
  std::error_code ec;
  const auto t = fs::last_write_time(p, ec);
  if (ec) return 0;
  return std::chrono::duration<double>(fs::file_time_type::clock::now() - t).count();
}

// Whether a live process holds `file`'s lock; a file whose holder died (the
// kernel dropped its lock) is removed.
bool held_elsewhere(const fs::path& file) {
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;  // removed meanwhile
  const bool held = ::flock(fd, LOCK_EX | LOCK_NB) != 0 && errno == EWOULDBLOCK;
  if (!held) {
    std::error_code ec;
    fs::remove(file, ec);
  }
  ::close(fd);
  return held;
}

// The other jobs with a live claim in `claims` (a job once, however many
// of its processes hold one).
std::vector<std::string> other_jobs(const fs::path& claims, const std::string& job) {
  std::vector<std::string> out;
  std::error_code ec;
  for (fs::directory_iterator it(claims, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(kNew, 0) == 0) {
      if (age_s(it->path()) > kNewGraceS) (void)held_elsewhere(it->path());
      continue;
    }
    const std::string other = job_of(name);
    if (other.empty() || other == job) continue;
    if (std::find(out.begin(), out.end(), other) == out.end() && held_elsewhere(it->path()))
      out.push_back(other);
  }
  return out;
}

}  // namespace

std::string job_token() {
  if (const char* ns = std::getenv("PMIX_NAMESPACE"); ns != nullptr && *ns != '\0') return file_safe(ns);
  return fmt::format("pid-{}", ::getpid());
}

DirectoryClaim::DirectoryClaim(const fs::path& dir, const Origin& origin, const std::string& job,
                               double wait_s) {
  const std::string& key = origin.key;
  const std::string& configured = origin.configured;
  const fs::path claims = dir / kClaims;
  std::error_code ec;
  fs::create_directories(claims, ec);
  std::string name = (claims / (std::string(kNew) + job + "-XXXXXX")).string();
  fd_ = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd_ < 0)
    FX_THROW(CheckpointError, fmt::format("{} '{}': cannot make a claim file in {}: {}", key, dir.string(),
                                          claims.string(), errno_text(errno)));
  if (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    // No flock here (some network file systems): no claim, as before.
    log::debug("{} '{}': no claim made, flock: {}", key, dir.string(), errno_text(errno));
    ::unlink(name.c_str());
    release();
    return;
  }
  path_ = claims / (job + name.substr(name.size() - kSuffix) + ".lock");
  fs::rename(name, path_, ec);
  if (ec) path_ = name;  // still a claim; others skip it for kNewGraceS
  const auto t0 = std::chrono::steady_clock::now();
  for (bool said = false;;) {
    const std::vector<std::string> others = other_jobs(claims, job);
    if (others.empty()) return;
    const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (waited >= wait_s) {
      release();
      FX_THROW(CheckpointError,
               fmt::format("{} '{}' is in use by another running job ({}; its lock files are in {}): two "
                           "jobs in one directory delete each other's versions; give each job a directory "
                           "of its own, e.g. {}={}/$SLURM_JOB_ID",
                           key, dir.string(), fmt::join(others, ", "), claims.string(), env_name(key),
                           configured));
    }
    if (!said)
      log::info("{} '{}': waiting up to {:g} s for job(s) {} to end", key, dir.string(), wait_s,
                fmt::join(others, ", "));
    said = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

DirectoryClaim::DirectoryClaim(DirectoryClaim&& o) noexcept
    : fd_(std::exchange(o.fd_, -1)), path_(std::exchange(o.path_, {})) {}

DirectoryClaim& DirectoryClaim::operator=(DirectoryClaim&& o) noexcept {
  if (this != &o) {
    release();
    fd_ = std::exchange(o.fd_, -1);
    path_ = std::exchange(o.path_, {});
  }
  return *this;
}

DirectoryClaim::~DirectoryClaim() { release(); }

void DirectoryClaim::release() noexcept {
  if (!path_.empty()) {
    std::error_code ec;
    fs::remove(path_, ec);
    path_.clear();
  }
  if (fd_ >= 0) ::close(std::exchange(fd_, -1));
}

}  // namespace fx::detail
