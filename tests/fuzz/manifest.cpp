// The HDF5 level's manifest and the node level's marker (the same YAML):
// any text parses into a manifest that formats and parses back the same,
// or a CheckpointError naming the file.
#include <fx/error.hpp>

#include <cstdlib>

#include "fuzz_support.hpp"
#include "manifest.hpp"

namespace {

bool same(const fx::detail::Manifest& a, const fx::detail::Manifest& b) {
  if (a.iteration != b.iteration || a.sequence != b.sequence || a.rank_count != b.rank_count ||
      a.files.size() != b.files.size())
    return false;
  for (std::size_t i = 0; i < a.files.size(); ++i) {
    const auto &x = a.files[i], &y = b.files[i];
    if (x.rank != y.rank || x.file != y.file || x.bytes != y.bytes || x.checksum != y.checksum) return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const bool every_rank = (data[0] & 1) != 0;  // an HDF5 manifest, else a marker
  const std::string text(reinterpret_cast<const char*>(data + 1), size - 1);
  try {
    const auto m = fx::detail::parse_manifest(text, "fuzzed/manifest.yaml", every_rank);
    const auto back = fx::detail::parse_manifest(fx::detail::format_manifest(m), "formatted", every_rank);
    if (!same(m, back)) std::abort();  // what fx writes must read back
  } catch (const fx::CheckpointError& e) {
    fx::fuzz::expect_named(e, "fuzzed/manifest.yaml");
  }
  return 0;
}
