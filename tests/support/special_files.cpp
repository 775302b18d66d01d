#include <fx_test/special_files.hpp>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <utility>
#include <vector>

namespace fx_test {

namespace {
void must(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error(what + ": " + std::strerror(errno));
}
}  // namespace

bool make_special_files(const std::string& dir) {
  const bool dev = ::mknod((dir + "/dev").c_str(), S_IFCHR | 0666, makedev(1, 7)) == 0;
  must(::mkfifo((dir + "/fifo").c_str(), 0600) == 0, "mkfifo " + dir + "/fifo");
  const int s = ::socket(AF_UNIX, SOCK_STREAM, 0);
  must(s >= 0, "socket");
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, (dir + "/sock").c_str(), sizeof(addr.sun_path) - 1);
  const bool bound = ::bind(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  ::close(s);
  must(bound, "bind " + dir + "/sock");
  std::ofstream(dir + "/target") << "keep me\n";
  must(::symlink((dir + "/target").c_str(), (dir + "/link").c_str()) == 0, "symlink " + dir + "/link");
  return dev;
}

std::string special_files_changed(const std::string& dir) {
  const std::vector<std::pair<std::string, mode_t>> kinds = {
      {"dev", S_IFCHR}, {"fifo", S_IFIFO}, {"sock", S_IFSOCK}, {"link", S_IFLNK}};
  for (const auto& [name, type] : kinds) {
    struct stat st {};
    const std::string p = dir + "/" + name;
    if (::lstat(p.c_str(), &st) != 0) {
      if (name == "dev") continue;  // not made (no root)
      return p + " is gone";
    }
    if ((st.st_mode & S_IFMT) != type) return p + " changed its type";
  }
  std::ifstream in(dir + "/target");
  std::stringstream text;
  text << in.rdbuf();
  return text.str() == "keep me\n" ? "" : dir + "/target changed";
}

}  // namespace fx_test
