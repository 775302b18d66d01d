#include <fx/data_store/store.hpp>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>

#include "buffer.hpp"
#include "image.hpp"

namespace {

using fx::detail::ImageInfo;

struct State {
  std::vector<double> field = std::vector<double>(1000);
  std::int64_t iteration = 17;
  Kokkos::View<int**, Kokkos::LayoutLeft, Kokkos::HostSpace> grid{"grid", 7, 5};
  Kokkos::View<double**, Kokkos::HostSpace> big{"big", 6, 6};
  std::vector<fx::Member> members;

  explicit State(double seed) {
    std::iota(field.begin(), field.end(), seed);
    for (int i = 0; i < 7; ++i) {
      for (int j = 0; j < 5; ++j) grid(i, j) = static_cast<int>(seed) + i * j;
    }
    for (int i = 0; i < 6; ++i) big(i, 1) = seed * i;
    members.push_back(fx::make_member("field", field));
    fx::Member it = fx::make_member("iteration", &iteration, 1);
    it.extents.clear();
    members.push_back(it);
    members.push_back(fx::make_member("grid", grid));
    members.push_back(fx::make_member("column", Kokkos::subview(big, Kokkos::ALL, 1)));  // not contiguous
  }
};

struct Packed {
  ImageInfo info;
  fx::detail::Buffer image;
};

Packed pack(const State& s, std::int64_t iteration) {
  Packed p;
  p.info = fx::detail::layout_image(s.members, iteration, 3, 1, 4);
  p.image.reset(p.info.total_bytes);
  fx::detail::pack_image(s.members, p.info, p.image.data());
  return p;
}

TEST(Image, RoundTripIsBitIdentical) {
  State a(1.5);
  const Packed p = pack(a, 40);
  EXPECT_EQ(p.info.payload_offset % 4096, 0u);
  for (const auto& m : p.info.members) EXPECT_EQ(m.offset % 64, 0u);

  const ImageInfo back =
      fx::detail::read_header(p.image.data(), p.info.payload_offset, p.image.size(), "test image");
  EXPECT_EQ(back.iteration, 40);
  EXPECT_EQ(back.sequence, 3);
  EXPECT_EQ(back.rank, 1);
  EXPECT_EQ(back.size, 4);
  ASSERT_EQ(back.members.size(), 4u);
  EXPECT_EQ(back.members[2].layout, "left");
  EXPECT_EQ(back.members[2].extents, (std::vector<std::uint64_t>{7, 5}));
  EXPECT_EQ(back.digest(), p.info.digest());

  State b(-3.0);
  fx::detail::unpack_image(back, p.image.data(), b.members, "test image");
  EXPECT_EQ(0, std::memcmp(a.field.data(), b.field.data(), a.field.size() * sizeof(double)));
  EXPECT_EQ(b.iteration, 17);
  for (int i = 0; i < 7; ++i) {
    for (int j = 0; j < 5; ++j) EXPECT_EQ(a.grid(i, j), b.grid(i, j));
  }
  for (int i = 0; i < 6; ++i) {
    EXPECT_EQ(b.big(i, 1), a.big(i, 1));
    EXPECT_EQ(b.big(i, 0), 0.0);  // the strided member's neighbours stay untouched
  }
}

TEST(Image, ChecksumMismatchNamesTheMember) {
  State a(2.0);
  Packed p = pack(a, 40);
  const auto& grid = p.info.members[2];
  p.image.data()[p.info.payload_offset + grid.offset + 3] ^= std::byte{0x10};
  State b(0.0);
  try {
    fx::detail::unpack_image(p.info, p.image.data(), b.members, "copy of rank 1");
    FAIL() << "no CheckpointError";
  } catch (const fx::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("copy of rank 1"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'grid'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(fx::detail::verify_payload(p.info, p.image.data(), "x"), fx::CheckpointError);
}

TEST(Image, DamagedHeadersAreRejected) {
  State a(2.0);
  Packed p = pack(a, 40);
  EXPECT_THROW(fx::detail::read_header(p.image.data(), 20, p.image.size(), "short"), fx::CheckpointError);
  p.image.data()[100] ^= std::byte{1};  // inside the member table
  EXPECT_THROW(fx::detail::read_header(p.image.data(), p.info.payload_offset, p.image.size(), "table"),
               fx::CheckpointError);
  p.image.data()[0] ^= std::byte{1};
  EXPECT_THROW(fx::detail::read_header(p.image.data(), p.info.payload_offset, p.image.size(), "magic"),
               fx::CheckpointError);
}

// Header fields of a crafted image: offsets near 2^64 once wrapped the
// bounds checks around and the table hash read far past the buffer; an
// image longer than its buffer let members lie outside it (fuzz findings).
TEST(Image, CraftedSizesAreRejected) {
  State a(2.0);
  Packed p = pack(a, 40);
  auto set = [&](std::size_t at, std::uint64_t v) { std::memcpy(p.image.data() + at, &v, sizeof v); };
  const auto expect_rejected = [&](const char* field) {
    try {
      fx::detail::read_header(p.image.data(), p.image.size(), p.image.size(), "crafted");
      ADD_FAILURE() << field << ": accepted";
    } catch (const fx::CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find("crafted"), std::string::npos) << e.what();
    }
  };
  const Packed good = pack(a, 40);
  auto restore = [&] { std::memcpy(p.image.data(), good.image.data(), good.info.payload_offset); };
  set(56, ~std::uint64_t{0} - 40);  // table bytes: header (72) + table wraps to 31
  expect_rejected("table bytes");
  restore();
  set(40, ~std::uint64_t{0} - 10);  // payload offset
  expect_rejected("payload offset");
  restore();
  set(48, p.image.size() + 4096);  // total bytes beyond the buffer
  expect_rejected("total bytes");
  restore();
  EXPECT_THROW(fx::detail::read_header(p.image.data(), p.image.size(), p.image.size() - 1, "short buffer"),
               fx::CheckpointError);
}

TEST(Image, OtherMembersAreIncompatible) {
  State a(2.0);
  const Packed p = pack(a, 40);
  State b(0.0);
  b.members.pop_back();
  EXPECT_THROW(fx::detail::unpack_image(p.info, p.image.data(), b.members, "x"), fx::CheckpointError);
  State c(0.0);
  c.members[0].name = "other";
  EXPECT_THROW(fx::detail::fit_members(p.info, c.members, "x"), fx::CheckpointError);
}

// Format 1 (before each member record named its checksum's kind: all
// XXH3), as node-local storage may hold from an earlier fx, is still read;
// a later format is refused by number.
TEST(Image, FormatOneImagesAreStillRead) {
  State a(4.0);
  const Packed p = pack(a, 40);
  fx::detail::Buffer old(p.image.size());
  std::memcpy(old.data(), p.image.data(), p.image.size());
  const std::byte* img = p.image.data();
  std::vector<std::byte> table;  // format 2's, less each record's kind byte
  std::size_t at = 72;
  const auto take = [&](std::size_t k) {
    table.insert(table.end(), img + at, img + at + k);
    at += k;
  };
  const auto u32 = [&] {
    std::uint32_t v;
    std::memcpy(&v, img + at, 4);
    return v;
  };
  for (std::size_t m = 0; m < p.info.members.size(); ++m) {
    for (int str = 0; str < 3; ++str) take(4 + u32());  // name, type, layout
    take(4 + 8 * std::size_t{u32()} + 24);              // extents, offset, bytes, hash
    at += 1;
  }
  const auto set = [&](std::size_t where, auto v) { std::memcpy(old.data() + where, &v, sizeof v); };
  set(8, std::uint32_t{1});
  set(56, std::uint64_t{table.size()});
  set(64, fx::detail::hash_bytes(table.data(), table.size()));
  std::memcpy(old.data() + 72, table.data(), table.size());
  std::memset(old.data() + 72 + table.size(), 0, p.info.payload_offset - 72 - table.size());
  const ImageInfo back = fx::detail::read_header(old.data(), old.size(), old.size(), "format 1");
  EXPECT_EQ(back.digest(), p.info.digest());
  for (const auto& r : back.members) EXPECT_EQ(r.hash_kind, fx::detail::HashKind::xxh3);
  State b(0.0);
  fx::detail::unpack_image(back, old.data(), b.members, "format 1");
  EXPECT_EQ(b.field, a.field);
  set(8, std::uint32_t{3});
  try {
    fx::detail::read_header(old.data(), old.size(), old.size(), "node file");
    ADD_FAILURE() << "format 3 accepted";
  } catch (const fx::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("node file: image format 3 (this build reads 1 and 2)"),
              std::string::npos)
        << e.what();
  }
}

TEST(Image, EmptyAndZeroSizedMembers) {
  std::vector<double> empty;
  std::vector<fx::Member> members{fx::make_member("empty", empty)};
  ImageInfo info = fx::detail::layout_image(members, 1, 1, 0, 1);
  fx::detail::Buffer image(info.total_bytes);
  fx::detail::pack_image(members, info, image.data());
  fx::detail::unpack_image(fx::detail::read_header(image.data(), image.size(), image.size(), "x"),
                           image.data(), members, "x");
  ImageInfo none = fx::detail::layout_image({}, 1, 1, 0, 1);
  EXPECT_GT(none.total_bytes, 0u);
}

}  // namespace
