#include <fx/error.hpp>
#include <gtest/gtest.h>

#include <fstream>

#include "manifest.hpp"
#include "tmp_dir.hpp"

namespace {

using fx::detail::Manifest;

Manifest sample() {
  Manifest m;
  m.iteration = 40;
  m.sequence = 4;
  m.rank_count = 2;
  m.files = {{0, "rank-000000.h5", 12345, 0xdeadbeef01234567ull}, {1, "rank-000001.h5", 999, 7}};
  return m;
}

void expect_error(const std::string& text, const std::string& fragment) {
  try {
    fx::detail::parse_manifest(text, "dir/manifest.yaml");
    FAIL() << "accepted:\n" << text;
  } catch (const fx::CheckpointError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("dir/manifest.yaml"), std::string::npos) << what;
    EXPECT_NE(what.find(fragment), std::string::npos) << what;
  }
}

TEST(Manifest, RoundTrip) {
  const Manifest m = sample();
  const std::string text = fx::detail::format_manifest(m);
  const Manifest back = fx::detail::parse_manifest(text, "x");
  EXPECT_EQ(back.iteration, 40);
  EXPECT_EQ(back.sequence, 4);
  EXPECT_EQ(back.rank_count, 2);
  ASSERT_EQ(back.files.size(), 2u);
  EXPECT_EQ(back.files[0].file, "rank-000000.h5");
  EXPECT_EQ(back.files[0].bytes, 12345u);
  EXPECT_EQ(back.files[0].checksum, 0xdeadbeef01234567ull);
  EXPECT_EQ(back.files[1].checksum, 7u);
}

TEST(Manifest, RanksInAnyOrder) {
  const std::string text =
      "format: fx-checkpoint\nformat_version: 1\niteration: 8\nsequence: 2\nrank_count: 2\nfiles:\n"
      "  - {rank: 1, file: b.h5, bytes: 2, xxh3: ff}\n  - {rank: 0, file: a.h5, bytes: 1, xxh3: 0a}\n";
  const Manifest m = fx::detail::parse_manifest(text, "x");
  EXPECT_EQ(m.files[0].file, "a.h5");
  EXPECT_EQ(m.files[1].checksum, 0xffu);
}

TEST(Manifest, Errors) {
  const std::string head = "format: fx-checkpoint\nformat_version: 1\niteration: 8\nsequence: 2\n";
  expect_error("format: [unclosed\n", "dir/manifest.yaml:");
  expect_error("- a\n- b\n", "expected a mapping");
  expect_error("format: other\n", "format is not");
  expect_error("format: fx-checkpoint\nformat_version: 9\n", "format_version 9");
  expect_error(head + "rank_count: 2\nfiles:\n  - {rank: 0, file: a.h5, bytes: 1, xxh3: 1}\n",
               "rank_count 2");
  expect_error(head +
                   "rank_count: 2\nfiles:\n  - {rank: 0, file: a.h5, bytes: 1, xxh3: 1}\n"
                   "  - {rank: 0, file: b.h5, bytes: 1, xxh3: 1}\n",
               "listed twice");
  expect_error(head + "rank_count: 1\nfiles:\n  - {rank: 0, file: a.h5, bytes: lots, xxh3: 1}\n", "'bytes'");
  expect_error(head + "rank_count: 1\nfiles:\n  - {rank: 0, file: a.h5, bytes: 1, xxh3: xyz}\n", "bad xxh3");
  expect_error(head + "rank_count: 1\nfiles:\n  - {rank: 0, file: ../a.h5, bytes: 1, xxh3: 1}\n",
               "bad file name");
  expect_error("format: fx-checkpoint\nformat_version: 1\nsequence: 2\n", "no 'iteration'");
  // A scalar where a file's mapping belongs escaped as yaml-cpp's
  // BadSubscript, not a CheckpointError (found by fuzz_manifest).
  expect_error(head + "rank_count: 1\nfiles:\n  - 5\n",
               "dir/manifest.yaml:7:5: expected a mapping with 'rank'");
  // A control byte in a name did not read back the same once written.
  expect_error(head + "rank_count: 1\nfiles:\n  - {rank: 0, file: \"a\\x01.h5\", bytes: 1, xxh3: 1}\n",
               "bad file name");
  // ".." named the directory above the version.
  expect_error(head + "rank_count: 1\nfiles:\n  - {rank: 0, file: '..', bytes: 1, xxh3: 1}\n",
               "bad file name");
}

// A marker lists a few ranks of rank_count: a huge rank_count is no
// allocation of its size.
TEST(Manifest, MarkerWithHugeRankCount) {
  const std::string text =
      "format: fx-checkpoint\nformat_version: 1\niteration: 8\nsequence: 2\nrank_count: 2147483647\n"
      "files:\n  - {rank: 2147483646, file: a.img, bytes: 1, xxh3: 1}\n";
  const auto m = fx::detail::parse_manifest(text, "marker", false);
  ASSERT_EQ(m.files.size(), 1u);
  EXPECT_EQ(m.files[0].rank, 2147483646);
}

TEST(Manifest, VersionDirectoryNames) {
  EXPECT_EQ(fx::detail::version_dir_name(40), "iter-000000000040");
  EXPECT_EQ(fx::detail::parse_version_dir("iter-000000000040"), 40);
  EXPECT_FALSE(fx::detail::parse_version_dir("iter-"));
  EXPECT_FALSE(fx::detail::parse_version_dir("iter-12a"));
  EXPECT_FALSE(fx::detail::parse_version_dir("other"));
  EXPECT_EQ(fx::detail::rank_file_name(3), "rank-000003.h5");
}

TEST(Manifest, WriteListPruneAndPermissions) {
  TmpDir tmp;
  const auto root = tmp.path() / "ckpt";
  for (std::int64_t it : {10, 20, 30, 40}) {
    const auto dir = fx::detail::make_version_dir(root, it);
    if (it != 30) {
      Manifest m = sample();
      m.iteration = it;
      fx::detail::write_manifest(dir, m);
    }
  }
  const auto st = std::filesystem::status(root / "iter-000000000010");
  EXPECT_EQ(st.permissions() & std::filesystem::perms::others_write, std::filesystem::perms::none);
  const auto mst = std::filesystem::status(root / "iter-000000000010" / "manifest.yaml");
  EXPECT_EQ(mst.permissions() & std::filesystem::perms::others_write, std::filesystem::perms::none);
  EXPECT_FALSE(std::filesystem::exists(root / "iter-000000000010" / "manifest.yaml.tmp"));
  EXPECT_EQ(fx::detail::read_manifest(root / "iter-000000000020" / "manifest.yaml").iteration, 20);

  const auto list = fx::detail::list_versions(root);
  ASSERT_EQ(list.size(), 4u);
  EXPECT_EQ(list[0].iteration, 40);
  EXPECT_FALSE(list[1].complete);  // 30 has no manifest

  // Keep the 2 newest complete at or below 40: 40 and 20; 30 (incomplete)
  // and 10 are retired: 10 loses its manifest, each rank deletes its own
  // files, rank 0 the directories a cycle later.
  std::ofstream(root / "iter-000000000010" / "rank-000000.h5") << "x";
  std::ofstream(root / "iter-000000000010" / "rank-000001.h5") << "x";
  const auto retired = fx::detail::retire_versions(root, 40, 2);
  EXPECT_EQ(retired.size(), 2u);
  EXPECT_FALSE(std::filesystem::exists(root / "iter-000000000010" / "manifest.yaml"));
  fx::detail::remove_rank_files(root, 40, 1);
  EXPECT_TRUE(std::filesystem::exists(root / "iter-000000000010" / "rank-000000.h5"));
  EXPECT_FALSE(std::filesystem::exists(root / "iter-000000000010" / "rank-000001.h5"));
  fx::detail::remove_dirs(retired);
  const auto left = fx::detail::list_versions(root);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0].iteration, 40);
  EXPECT_EQ(left[1].iteration, 20);

  const auto moved = fx::detail::quarantine_versions_above(root, 20);
  ASSERT_EQ(moved.size(), 1u);
  EXPECT_EQ(moved[0].second, root / "quarantine" / "iter-000000000040");
  EXPECT_TRUE(std::filesystem::exists(moved[0].second / "manifest.yaml"));
  EXPECT_EQ(fx::detail::list_versions(root).size(), 1u);  // the quarantine is not a version
  EXPECT_TRUE(fx::detail::list_versions(tmp.path() / "missing").empty());
}

}  // namespace
