#pragma once
// Shared by the fuzz targets: splitting one input into parts, a private
// scratch directory, and the check that a rejection names its origin.
#include <fx/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

namespace fx::fuzz {

// The input cut at NUL bytes into at most `n` parts (the last keeps the rest).
inline std::vector<std::string> split_parts(const std::uint8_t* data, std::size_t size, std::size_t n) {
  std::vector<std::string> parts(1);
  for (std::size_t i = 0; i < size; ++i) {
    if (data[i] == 0 && parts.size() < n) {
      parts.emplace_back();
    } else {
      parts.back().push_back(static_cast<char>(data[i]));
    }
  }
  parts.resize(n);
  return parts;
}

// The lines of `text`, empty ones dropped.
inline std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const auto nl = std::min(text.find('\n', at), text.size());
    if (nl > at) out.push_back(text.substr(at, nl - at));
    at = nl + 1;
  }
  return out;
}

// A directory of this process's own, made once, removed at exit (a crash
// leaves it, beside the input that caused it).
class ScratchDir {
 public:
  ScratchDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "fx-fuzz-XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) std::abort();
    path_ = tmpl;
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline const std::filesystem::path& scratch_dir() {
  static const ScratchDir dir;
  return dir.path();
}

inline void write_file(const std::filesystem::path& p, std::string_view bytes) {
  std::ofstream(p, std::ios::binary | std::ios::trunc)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A reader's rejection must name where the bytes came from; one that does
// not is a finding (abort: the fuzzer keeps the input).
inline void expect_named(const fx::Error& e, std::string_view origin) {
  if (std::string_view(e.what()).find(origin) == std::string_view::npos) {
    std::cerr << "rejection does not name '" << origin << "': " << e.what() << "\n";
    std::abort();
  }
}

}  // namespace fx::fuzz
