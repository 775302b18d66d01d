// fx::detail's one way to write a file (core/private/fx/detail/files.hpp):
// as root an open for writing turned /dev/full into a regular file holding
// the report. Device nodes, FIFOs, sockets and links are refused and left
// as they were; a regular file is replaced through a temporary.
#include <fx/detail/files.hpp>
#include <fx_test/special_files.hpp>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {
namespace fs = std::filesystem;
using fx::detail::PathKind;

struct Scratch {
  Scratch() {
    char tmpl[] = "/tmp/fx-files-test.XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string path;
};

std::string slurp(const std::string& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

mode_t type_of(const std::string& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st.st_mode & S_IFMT;
}

// Nothing but `keep` in `dir`: no temporary was left behind.
void expect_only(const std::string& dir, const std::vector<std::string>& keep) {
  std::vector<std::string> got;
  for (const auto& e : fs::directory_iterator(dir)) got.push_back(e.path().filename().string());
  std::sort(got.begin(), got.end());
  std::vector<std::string> want = keep;
  std::sort(want.begin(), want.end());
  EXPECT_EQ(got, want);
}

// The special files of the issue, made in a directory of the test's own.
struct Specials : Scratch {
  Specials() : has_dev(fx_test::make_special_files(path)) {}
  std::string dev = path + "/dev", fifo = path + "/fifo", sock = path + "/sock", link = path + "/link",
              target = path + "/target";
  bool has_dev;
};

TEST(Files, RefusesWhatIsNoRegularFile) {
  Specials d;
  struct Case {
    std::string path;
    mode_t type;
    std::string why;
  };
  std::vector<Case> cases = {{d.fifo, S_IFIFO, d.fifo + " is a FIFO"},
                             {d.sock, S_IFSOCK, d.sock + " is a socket"},
                             {d.link, S_IFLNK, d.link + " is a symbolic link"},
                             {d.path, S_IFDIR, d.path + " is a directory"}};
  if (d.has_dev) cases.push_back({d.dev, S_IFCHR, d.dev + " is a character device"});
  for (const auto& c : cases) {
    EXPECT_EQ(fx::detail::unusable_target(c.path, PathKind::file), c.why);
    EXPECT_EQ(fx::detail::unwritable_reason(c.path, PathKind::file), c.why);
    EXPECT_EQ(fx::detail::write_replacing(c.path, "report\n", 0644), c.why);
    EXPECT_EQ(type_of(c.path), c.type) << c.path;  // left as it was
  }
  EXPECT_EQ(fx_test::special_files_changed(d.path), "");  // left alone, the link not followed
  // A directory where a directory is meant, even through a link the user
  // named; anything else is refused.
  EXPECT_EQ(fx::detail::unusable_target(d.path, PathKind::directory), "");
  EXPECT_EQ(fx::detail::unusable_target(d.fifo, PathKind::directory),
            d.fifo + " is not a directory (a FIFO)");
  EXPECT_EQ(fx::detail::make_directory(d.sock, 0750), d.sock + " is not a directory (a socket)");
  const std::string dir_link = d.path + "/dir-link";
  ASSERT_EQ(::symlink(d.path.c_str(), dir_link.c_str()), 0);
  EXPECT_EQ(fx::detail::unusable_target(dir_link, PathKind::directory), "");
  // ...but fx never goes through a link where it names the directory itself.
  EXPECT_EQ(fx::detail::make_directory(dir_link, 0750), dir_link + " is not a directory (a symbolic link)");
  std::vector<std::string> left = {"fifo", "sock", "link", "target", "dir-link"};
  if (d.has_dev) left.push_back("dev");
  expect_only(d.path, left);
}

TEST(Files, ProcIsRefusedBeforeAnyWork) {
  // /proc/self/status is a regular file that root may "write": its
  // temporary cannot be made beside it.
  EXPECT_EQ(fx::detail::unwritable_reason("/proc/self/status", PathKind::file), "/proc/self is not writable");
  EXPECT_EQ(fx::detail::unwritable_reason("/proc/fx/run.yaml", PathKind::file),
            "cannot create files in /proc: No such file or directory");
  EXPECT_NE(fx::detail::write_replacing("/proc/self/status", "x", 0644), "");
}

TEST(Files, ReplacesARegularFileThroughATemporary) {
  Scratch d;
  const std::string p = d.path + "/report.yaml";
  EXPECT_EQ(fx::detail::unwritable_reason(p, PathKind::file), "");
  EXPECT_EQ(fx::detail::write_replacing(p, "one\n", 0640, true), "");
  EXPECT_EQ(slurp(p), "one\n");
  EXPECT_EQ(fx::detail::write_replacing(p, "two\n", 0644), "");
  EXPECT_EQ(slurp(p), "two\n");
  struct stat st {};
  ASSERT_EQ(::stat(p.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0644u);
  expect_only(d.path, {"report.yaml"});
  // A temporary made by name (as HDF5 needs) and renamed over the target.
  fx::detail::TempFile tmp;
  ASSERT_EQ(fx::detail::create_temp_beside(p, tmp), "");
  EXPECT_EQ(tmp.path.rfind(p + ".tmp.", 0), 0u);
  ::close(tmp.fd);
  EXPECT_EQ(fx::detail::replace_with(tmp.path, p), "");
  EXPECT_EQ(slurp(p), "");
  expect_only(d.path, {"report.yaml"});
  EXPECT_EQ(fx::detail::make_directory(d.path + "/sub", 0750), "");
  EXPECT_EQ(fx::detail::make_directory(d.path + "/sub", 0750), "");
}

}  // namespace
