#include <fx/detail/files.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

namespace fx::detail {

std::string errno_text(int err) {
  char buf[256];
  return ::strerror_r(err, buf, sizeof buf);  // GNU: the text, in buf or a static string
}

namespace {

const char* what_is(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISCHR(m)) return "a character device";
  if (S_ISBLK(m)) return "a block device";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISSOCK(m)) return "a socket";
  if (S_ISLNK(m)) return "a symbolic link";
  return "not a regular file";
}

std::string trimmed(const std::string& path) {
  std::string p = path.empty() ? "." : path;
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// access(W_OK) passes where nothing can be created (as root under /proc):
// create and remove a file of this process's own to be sure.
std::string cannot_create_in(const std::string& dir) {
  const std::string probe = fmt::format("{}/.fx-probe-{}", dir == "/" ? "" : dir, ::getpid());
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) return fmt::format("cannot create files in {}: {}", dir, errno_text(errno));
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

}  // namespace

std::string unusable_target(const std::string& path, PathKind kind) {
  const std::string p = trimmed(path);
  struct stat st {};
  if (::lstat(p.c_str(), &st) != 0) return "";  // nothing there (or an ancestor is missing: checked apart)
  if (kind == PathKind::file)
    return S_ISREG(st.st_mode) ? "" : fmt::format("{} is {}", p, what_is(st.st_mode));
  // A directory the user named may be a link to one (a scratch area).
  if (S_ISLNK(st.st_mode) && ::stat(p.c_str(), &st) != 0)
    return fmt::format("{} is a dangling symbolic link", p);
  return S_ISDIR(st.st_mode) ? "" : fmt::format("{} is not a directory ({})", p, what_is(st.st_mode));
}

std::string unwritable_reason(const std::string& path, PathKind kind) {
  const std::string p = trimmed(path);
  if (std::string why = unusable_target(p, kind); !why.empty()) return why;
  struct stat st {};
  if (::stat(p.c_str(), &st) == 0) {
    if (::access(p.c_str(), W_OK) != 0) return fmt::format("{} is not writable", p);
    if (kind == PathKind::directory) return cannot_create_in(p);
  }
  // Walk up to the nearest existing ancestor: fx creates what is missing,
  // and a file's temporary goes into its directory.
  std::string dir = p;
  for (;;) {
    const auto slash = dir.find_last_of('/');
    if (slash == std::string::npos) {
      dir = ".";
    } else {
      dir = slash == 0 ? "/" : dir.substr(0, slash);
    }
    if (::stat(dir.c_str(), &st) == 0) break;
    if (dir == "." || dir == "/") return fmt::format("{} does not exist", dir);
  }
  if (!S_ISDIR(st.st_mode)) return fmt::format("{} is not a directory", dir);
  if (::access(dir.c_str(), W_OK | X_OK) != 0) return fmt::format("{} is not writable", dir);
  return cannot_create_in(dir);
}

std::string create_temp_beside(const std::string& target, TempFile& out) {
  std::vector<char> name(target.begin(), target.end());
  for (const char c : std::string_view(".tmp.XXXXXX")) name.push_back(c);
  name.push_back('\0');
  const int fd = ::mkostemp(name.data(), O_CLOEXEC);
  if (fd < 0) return errno_text(errno);
  out.path = name.data();
  out.fd = fd;
  return "";
}

std::string replace_with(const std::string& tmp, const std::string& target) {
  std::string why = unusable_target(target, PathKind::file);
  if (why.empty() && ::rename(tmp.c_str(), target.c_str()) != 0) why = errno_text(errno);
  if (!why.empty()) ::unlink(tmp.c_str());
  return why;
}

namespace {

// Writes all of data to fd, retrying short writes and EINTR: 0, or the errno
// that stopped it (ENOSPC for a write of nothing).
int write_all(int fd, std::string_view data) {
  int err = 0;
  for (std::size_t done = 0; done < data.size() && err == 0;) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w > 0)
      done += static_cast<std::size_t>(w);
    else if (w == 0)
      err = ENOSPC;
    else if (errno != EINTR)
      err = errno;
  }
  return err;
}

}  // namespace

std::string write_replacing(const std::string& target, std::string_view data, unsigned mode, bool durable) {
  // Refused before anything is created beside it.
  if (std::string why = unusable_target(target, PathKind::file); !why.empty()) return why;
  TempFile tmp;
  if (std::string why = create_temp_beside(target, tmp); !why.empty()) return why;
  int err = write_all(tmp.fd, data);
  if (err == 0 && ::fchmod(tmp.fd, static_cast<mode_t>(mode)) != 0) err = errno;
  if (err == 0 && durable && ::fsync(tmp.fd) != 0) err = errno;
  if (::close(tmp.fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    ::unlink(tmp.path.c_str());
    return errno_text(err);
  }
  return replace_with(tmp.path, target);
}

std::string make_directory(const std::string& dir, unsigned mode) {
  if (::mkdir(dir.c_str(), static_cast<mode_t>(mode)) == 0) return "";
  const int err = errno;
  struct stat st {};
  if (err == EEXIST && ::lstat(dir.c_str(), &st) == 0)
    return S_ISDIR(st.st_mode) ? "" : fmt::format("{} is not a directory ({})", dir, what_is(st.st_mode));
  return errno_text(err);
}

}  // namespace fx::detail
