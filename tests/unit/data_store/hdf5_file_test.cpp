#include <fx/data_store/store.hpp>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <fstream>
#include <numeric>

#include "hdf5_plugin.hpp"
#include "tmp_dir.hpp"

#if FX_DATA_STORE_HDF5
namespace {

namespace fs = std::filesystem;
using fx::detail::Buffer;
using fx::detail::ImageInfo;
using fx::detail::Manifest;

// The plugin the data store loads (its errors are caught here as
// fx::CheckpointError, thrown from the plugin).
const fx::detail::Hdf5Api& h5() { return fx::detail::load_hdf5_plugin(); }

// A rank's state with a recognisable byte pattern to find in the file.
struct RankState {
  std::vector<std::uint8_t> pattern = std::vector<std::uint8_t>(4096);
  std::vector<double> field = std::vector<double>(300);
  Kokkos::View<float**, Kokkos::LayoutLeft, Kokkos::HostSpace> grid{"grid", 3, 4};
  struct Pair {
    int a;
    short b;
  };
  std::vector<Pair> pairs = std::vector<Pair>(5);
  std::vector<fx::Member> members;

  explicit RankState(int seed) {
    for (std::size_t i = 0; i < pattern.size(); ++i)
      pattern[i] = static_cast<std::uint8_t>((i * 7 + 3) % 251);
    std::iota(field.begin(), field.end(), seed);
    grid(2, 3) = static_cast<float>(seed);
    pairs[4] = {seed, 9};
    members = {fx::make_member("pattern", pattern), fx::make_member("a/b%field", field),
               fx::make_member("grid", grid), fx::make_member("pairs", pairs)};
  }
};

struct Written {
  fs::path dir;
  Manifest manifest;
};

Written write(const fs::path& root, const RankState& s, std::int64_t it, int rank, int size) {
  ImageInfo info = fx::detail::layout_image(s.members, it, 2, rank, size);
  Buffer image(info.total_bytes);
  fx::detail::pack_image(s.members, info, image.data());
  Written w;
  w.dir = fx::detail::make_version_dir(root, it);
  w.manifest.iteration = it;
  w.manifest.sequence = 2;
  w.manifest.rank_count = size;
  w.manifest.files.resize(static_cast<std::size_t>(size));
  const auto bytes = h5().write_rank_file(w.dir, info, image.data());
  w.manifest.files[static_cast<std::size_t>(rank)] = {rank, fx::detail::rank_file_name(rank), bytes,
                                                      info.digest()};
  return w;
}

std::string read_error(const Written& w, int rank, const std::vector<fx::Member>& members) {
  Buffer image;
  try {
    h5().read_rank_file(w.dir, w.manifest, rank, members, image);
  } catch (const fx::CheckpointError& e) {
    return e.what();
  }
  return "";
}

std::vector<char> slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

void spit(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

TEST(Hdf5File, RoundTripWithAttributes) {
  TmpDir tmp;
  RankState a(5);
  const Written w = write(tmp.path(), a, 40, 1, 3);
  const fs::path file = w.dir / "rank-000001.h5";
  ASSERT_TRUE(fs::exists(file));
  EXPECT_FALSE(fs::exists(w.dir / "rank-000001.h5.tmp"));
  struct stat st {};
  ASSERT_EQ(::stat(file.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & S_IWOTH, 0u);
  EXPECT_EQ(st.st_mode & S_IROTH, 0u);

  RankState b(0);
  Buffer image;
  const ImageInfo info = h5().read_rank_file(w.dir, w.manifest, 1, b.members, image);
  EXPECT_EQ(info.iteration, 40);
  EXPECT_EQ(info.sequence, 2);
  fx::detail::unpack_image(info, image.data(), b.members, "x");
  EXPECT_EQ(b.field, a.field);
  EXPECT_EQ(b.pattern, a.pattern);
  EXPECT_EQ(b.grid(2, 3), 5.0f);
  EXPECT_EQ(b.pairs[4].a, 5);
  EXPECT_EQ(b.pairs[4].b, 9);
}

TEST(Hdf5File, CorruptedDatasetIsDetected) {
  TmpDir tmp;
  RankState a(5);
  const Written w = write(tmp.path(), a, 40, 0, 1);
  const fs::path file = w.dir / "rank-000000.h5";
  auto bytes = slurp(file);
  const auto at = std::search(bytes.begin(), bytes.end(), a.pattern.begin(), a.pattern.begin() + 64,
                              [](char x, std::uint8_t y) { return static_cast<std::uint8_t>(x) == y; });
  ASSERT_NE(at, bytes.end());
  at[1000] ^= 0x40;  // same size, one bit flipped inside the dataset
  spit(file, bytes);
  const std::string e = read_error(w, 0, RankState(0).members);
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("checksum mismatch in dataset 'pattern'"), std::string::npos) << e;
}

TEST(Hdf5File, TruncatedFileIsDetected) {
  TmpDir tmp;
  RankState a(5);
  Written w = write(tmp.path(), a, 40, 0, 1);
  const fs::path file = w.dir / "rank-000000.h5";
  fs::resize_file(file, fs::file_size(file) / 2);
  std::string e = read_error(w, 0, RankState(0).members);
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
  EXPECT_NE(e.find("the manifest says"), std::string::npos) << e;
  // Even when the manifest agrees with the truncated size, HDF5 or the checksums notice.
  w.manifest.files[0].bytes = fs::file_size(file);
  e = read_error(w, 0, RankState(0).members);
  EXPECT_NE(e.find(file.string()), std::string::npos) << e;
}

TEST(Hdf5File, MissingFileIsDetected) {
  TmpDir tmp;
  RankState a(5);
  const Written w = write(tmp.path(), a, 40, 0, 1);
  fs::remove(w.dir / "rank-000000.h5");
  const std::string e = read_error(w, 0, RankState(0).members);
  EXPECT_NE(e.find("rank-000000.h5: rank file is missing"), std::string::npos) << e;
}

TEST(Hdf5File, GarbageFileIsDetected) {
  TmpDir tmp;
  RankState a(5);
  const Written w = write(tmp.path(), a, 40, 0, 1);
  const fs::path file = w.dir / "rank-000000.h5";
  spit(file, std::vector<char>(fs::file_size(file), 'x'));
  EXPECT_NE(read_error(w, 0, RankState(0).members).find("not a readable HDF5 file"), std::string::npos);
}

TEST(Hdf5File, OtherMembersOrOtherVersionAreRejected) {
  TmpDir tmp;
  RankState a(5);
  Written w = write(tmp.path(), a, 40, 0, 1);
  RankState other(0);
  other.members.pop_back();
  EXPECT_NE(read_error(w, 0, other.members).find("the application registered"), std::string::npos);
  std::vector<double> wrong(301);
  RankState resized(0);
  resized.members[1] = fx::make_member("a/b%field", wrong);
  EXPECT_NE(read_error(w, 0, resized.members).find("dataset 'a/b%field'"), std::string::npos);
  w.manifest.files[0].checksum ^= 1;
  EXPECT_NE(read_error(w, 0, RankState(0).members).find("differ from the manifest"), std::string::npos);
  w.manifest.files[0].checksum ^= 1;
  w.manifest.iteration = 41;
  EXPECT_NE(read_error(w, 0, RankState(0).members).find("holds iteration 40"), std::string::npos);
}

// After a shrink the registered members differ (other extents): the file's
// own table describes the image, checked against the manifest all the same.
TEST(Hdf5File, ReadAsWrittenTakesTheTableFromTheFile) {
  TmpDir tmp;
  RankState a(7);
  Written w = write(tmp.path(), a, 40, 2, 4);
  Buffer image;
  const ImageInfo info = h5().read_rank_file_as_written(w.dir, w.manifest, 2, image);
  EXPECT_EQ(info.rank, 2);
  EXPECT_EQ(info.size, 4);
  ASSERT_EQ(info.members.size(), 4u);
  EXPECT_EQ(info.members[1].name, "a/b%field");
  EXPECT_EQ(info.members[1].type, "float64");
  EXPECT_EQ(info.members[2].layout, "left");
  EXPECT_EQ(info.members[2].extents, (std::vector<std::uint64_t>{3, 4}));
  fx::detail::verify_payload(info, image.data(), "x");
  const auto* field =
      reinterpret_cast<const double*>(image.data() + info.payload_offset + info.members[1].offset);
  EXPECT_TRUE(std::equal(a.field.begin(), a.field.end(), field));
  w.manifest.files[2].checksum ^= 1;
  EXPECT_THROW(h5().read_rank_file_as_written(w.dir, w.manifest, 2, image), fx::CheckpointError);
}

// A device member's checksum (mix64) is written under its kind's name and
// read back with its kind (the registered member's is not assumed); host
// members keep XXH3.
TEST(Hdf5File, EachMemberKeepsItsChecksumKind) {
  TmpDir tmp;
  RankState a(5);
  using Grid = Kokkos::View<float**, Kokkos::LayoutLeft>;
  const Grid grid("grid", 3, 4);
  Kokkos::deep_copy(grid, a.grid);
  a.members[2] = fx::detail::staged_member("grid", grid, [grid]() -> const Grid& { return grid; });
  ASSERT_TRUE(a.members[2].device_bytes);
  const Written w = write(tmp.path(), a, 40, 0, 1);
  Buffer image;
  RankState b(0);
  const ImageInfo info = h5().read_rank_file(w.dir, w.manifest, 0, b.members, image);
  EXPECT_EQ(info.members[0].hash_kind, fx::detail::HashKind::xxh3);
  EXPECT_EQ(info.members[2].hash_kind, fx::detail::HashKind::mix64);
  fx::detail::verify_payload(info, image.data(), "x");
  fx::detail::unpack_image(info, image.data(), b.members, "x");
  EXPECT_EQ(b.grid(2, 3), 5.0f);
}

}  // namespace
#endif
