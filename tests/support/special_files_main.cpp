// fx_special_files make DIR | check DIR: CTest's fixture around the
// launcher's tests of targets that are no regular file (check: exit 1 when
// one was replaced or followed).
#include <fx_test/special_files.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <filesystem>
#include <string>

int main(int argc, char** argv) {
  const std::string verb = argc == 3 ? argv[1] : "";
  if (verb == "make") {
    std::filesystem::remove_all(argv[2]);
    std::filesystem::create_directories(argv[2]);
    fx_test::make_special_files(argv[2]);
    return 0;
  }
  if (verb == "check") {
    const std::string changed = fx_test::special_files_changed(argv[2]);
    if (changed.empty()) return 0;
    std::fprintf(stderr, "fx_special_files: %s\n", changed.c_str());
    return 1;
  }
  std::fprintf(stderr, "usage: fx_special_files make|check DIR\n");
  return 2;
}
