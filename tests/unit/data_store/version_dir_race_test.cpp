// make_version_dir with ranks sharing a node-local directory (threads
// here, as ranks of one host are): its own executable, as its 1000 rounds
// of real file system races take seconds, more on a loaded CI machine.
#include <fx/error.hpp>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "manifest.hpp"
#include "tmp_dir.hpp"

namespace {

// Ranks sharing a node directory race to move a file out of a version's
// way and make the version there: the one that comes second must leave
// the version the first made (it once moved it aside, images and all).
TEST(Manifest, RacingRanksKeepTheVersionOneOfThemMade) {
  namespace fs = std::filesystem;
  constexpr int kRanks = 4;
  constexpr int kRounds = 1000;
  for (int round = 0; round < kRounds; ++round) {
    TmpDir tmp;
    const fs::path root = tmp.path() / "node";
    fs::create_directories(root);
    std::ofstream(root / fx::detail::version_dir_name(15)) << "not a version\n";
    std::atomic<int> ready{0};
    std::atomic<int> failed{0};
    std::vector<std::thread> ranks;
    for (int r = 0; r < kRanks; ++r) {
      ranks.emplace_back([&, r] {
        for (ready.fetch_add(1); ready.load() < kRanks;) std::this_thread::yield();
        try {
          const fs::path dir = fx::detail::make_version_dir(root, 15);
          std::ofstream(dir / fx::detail::rank_file_name(r)) << r;
        } catch (const fx::Error&) {
          failed.fetch_add(1);
        }
      });
    }
    for (auto& t : ranks) t.join();
    ASSERT_EQ(failed.load(), 0) << "round " << round;
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_TRUE(fs::exists(root / fx::detail::version_dir_name(15) / fx::detail::rank_file_name(r)))
          << "round " << round << ": rank " << r << "'s image is not in its version";
    }
    // Aside: the file (by one name or more), never a version.
    int files = 0;
    for (const auto& e : fs::directory_iterator(root / "quarantine")) {
      ASSERT_FALSE(e.is_directory()) << "round " << round << ": " << e.path() << " is a version moved aside";
      ++files;
    }
    ASSERT_GE(files, 1) << "round " << round;
  }
}

}  // namespace
