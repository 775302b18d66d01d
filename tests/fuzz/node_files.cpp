// The node-local level's scan and loader: a marker and an image written
// into a version directory, then found, mapped, checked against the
// marker and verified as a restore does. Input: marker text, NUL, image
// bytes. In the marker, @SIZE@ becomes the image's size and @DIGEST@ its
// header's digest, so that inputs get past the size and digest checks.
#include <fx/error.hpp>

#include <fmt/format.h>

#include "fuzz_support.hpp"
#include "image.hpp"
#include "node_files.hpp"

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (auto at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
    s.replace(at, from.size(), to);
}

std::string digest_of(const std::string& image) {
  try {
    const auto* p = reinterpret_cast<const std::byte*>(image.data());
    return fmt::format("{:016x}", fx::detail::read_header(p, image.size(), image.size(), "seed").digest());
  } catch (const fx::CheckpointError&) {
    return "0";
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace fs = std::filesystem;
  auto parts = fx::fuzz::split_parts(data, size, 2);
  std::string& marker = parts[0];
  const std::string& image = parts[1];
  replace_all(marker, "@SIZE@", std::to_string(image.size()));
  replace_all(marker, "@DIGEST@", digest_of(image));
  const fs::path root = fx::fuzz::scratch_dir() / "node";
  std::error_code ec;
  fs::remove_all(root, ec);
  const fs::path version = root / "iter-000000000020";
  fs::create_directories(version);
  fx::fuzz::write_file(version / fx::detail::marker_file(0), marker);
  fx::fuzz::write_file(version / fx::detail::own_file(0), image);
  fx::fuzz::write_file(version / fx::detail::partner_file(0), image);
  for (const auto& f : fx::detail::scan_node_files(root, 0, false)) {
    const std::string what = f.path.string();
    try {
      fx::detail::Buffer mapped;
      fx::detail::load_node_file(f, mapped);
      // What the rank that needs it does with the bytes it receives.
      const auto info = fx::detail::read_header(mapped.data(), mapped.size(), mapped.size(), what);
      fx::detail::verify_payload(info, mapped.data(), what);
    } catch (const fx::CheckpointError& e) {
      fx::fuzz::expect_named(e, what);
    }
  }
  return 0;
}
