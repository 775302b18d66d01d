// Members whose size changes (fx::resizable): an image holds the extents a
// member had at the commit, and unpacking it reallocates the member to them.
#include <fx/data_store/member_shape.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <gtest/gtest.h>

#include <numeric>

#include "buffer.hpp"
#include "image.hpp"

namespace {

struct PackedMembers {
  fx::detail::ImageInfo info;
  fx::detail::Buffer image;
};

PackedMembers pack(std::vector<fx::Member>& members) {
  for (auto& m : members) fx::detail::refresh(m);  // as commit() does
  PackedMembers p;
  p.info = fx::detail::layout_image(members, 20, 1, 0, 1);
  p.image.reset(p.info.total_bytes);
  fx::detail::pack_image(members, p.info, p.image.data());
  return p;
}

TEST(Resizable, VectorComesBackAtTheCommittedSize) {
  std::vector<std::int64_t> v(10);
  std::iota(v.begin(), v.end(), 100);
  std::vector<fx::Member> members{fx::make_member("v", fx::resizable(v))};
  v.resize(13, 7);  // grows after registration: the commit takes 13
  const PackedMembers p = pack(members);
  EXPECT_EQ(p.info.members[0].extents, std::vector<std::uint64_t>{13});
  EXPECT_EQ(p.info.members[0].bytes, 13 * sizeof(std::int64_t));
  const auto want = v;
  v.assign(3, -1);  // shrinks before the restore
  fx::detail::unpack_image(p.info, p.image.data(), members, "test");
  EXPECT_EQ(v, want);
  EXPECT_EQ(members[0].bytes, 13 * sizeof(std::int64_t));
}

TEST(Resizable, ViewKeepsItsLabelAndFixedExtent) {
  Kokkos::View<double* [3], Kokkos::HostSpace> x("atoms_x", 5);
  for (int i = 0; i < 5; ++i)
    for (int c = 0; c < 3; ++c) x(i, c) = 10.0 * i + c;
  std::vector<fx::Member> members{fx::make_member("x", fx::resizable(x))};
  const PackedMembers p = pack(members);
  EXPECT_EQ(p.info.members[0].extents, (std::vector<std::uint64_t>{5, 3}));
  x = Kokkos::View<double* [3], Kokkos::HostSpace>("other", 2);
  fx::detail::unpack_image(p.info, p.image.data(), members, "test");
  ASSERT_EQ(x.extent(0), 5u);
  EXPECT_EQ(x.label(), "other");  // the View's label now, kept by the reallocation
  for (int i = 0; i < 5; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_EQ(x(i, c), 10.0 * i + c);
}

TEST(Resizable, AFixedDimensionCannotChange) {
  Kokkos::View<double* [3], Kokkos::HostSpace> x("x", 4);
  try {
    fx::detail::reshape_view(x, {4, 2}, "x");
    FAIL() << "expected CheckpointError";
  } catch (const fx::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("member 'x' cannot take the checkpoint's extents [4, 2]: its type "
                                         "fixes dimension 1 at 3"),
              std::string::npos)
        << e.what();
  }
  EXPECT_THROW(fx::detail::reshape_view(x, {4}, "x"), fx::CheckpointError);
  EXPECT_EQ(x.extent(0), 4u);
}

TEST(Resizable, EmptyAndBack) {
  std::vector<float> v;
  Kokkos::View<int*, Kokkos::HostSpace> w("w", 0);
  std::vector<fx::Member> members{fx::make_member("v", fx::resizable(v)),
                                  fx::make_member("w", fx::resizable(w))};
  const PackedMembers empty = pack(members);
  v.assign(9, 1.5f);
  w = Kokkos::View<int*, Kokkos::HostSpace>("w", 4);
  const PackedMembers full = pack(members);
  fx::detail::unpack_image(empty.info, empty.image.data(), members, "empty");
  EXPECT_TRUE(v.empty());
  EXPECT_EQ(w.extent(0), 0u);
  fx::detail::unpack_image(full.info, full.image.data(), members, "full");
  EXPECT_EQ(v, std::vector<float>(9, 1.5f));
  EXPECT_EQ(w.extent(0), 4u);
}

// Another type under the same name is no size change: rejected, untouched.
TEST(Resizable, AnotherTypeIsRejected) {
  std::vector<double> a(4, 2.0);
  std::vector<fx::Member> members{fx::make_member("a", fx::resizable(a))};
  const PackedMembers p = pack(members);
  std::vector<float> b(2);
  std::vector<fx::Member> other{fx::make_member("a", fx::resizable(b))};
  EXPECT_THROW(fx::detail::unpack_image(p.info, p.image.data(), other, "test"), fx::CheckpointError);
  EXPECT_EQ(b.size(), 2u);
}

TEST(Resizable, StoreCountsTheCurrentBytesAndCopiesAtTheCommit) {
  const auto owned = fx::detail::StoreAccess::make();
  fx::DataStore& store = *owned;
  std::vector<std::uint32_t> v(5);
  store.add("v", fx::resizable(v));
  EXPECT_EQ(store.bytes(), 20u);
  v.resize(50);
  EXPECT_EQ(store.bytes(), 200u);
  EXPECT_THROW(store.set_snapshot("v", fx::Snapshot::during_next_step), fx::UsageError);
  store.set_snapshot("v", fx::Snapshot::at_commit);
}

}  // namespace
