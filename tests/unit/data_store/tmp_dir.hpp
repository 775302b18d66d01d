#pragma once
// A scratch directory removed at the end of the test.
#include <unistd.h>

#include <filesystem>
#include <string>

class TmpDir {
 public:
  TmpDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fx-ds-test-XXXXXX").string();
    path_ = mkdtemp(tmpl.data());
  }
  ~TmpDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};
