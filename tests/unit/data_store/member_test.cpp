#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <utility>

namespace {

std::vector<std::byte> save(const fx::Member& m) {
  std::vector<std::byte> out(m.bytes);
  m.save(out.data());
  return out;
}

TEST(Member, TypeNames) {
  EXPECT_EQ(fx::detail::type_name<double>(), "float64");
  EXPECT_EQ(fx::detail::type_name<float>(), "float32");
  EXPECT_EQ(fx::detail::type_name<int>(), "int32");
  EXPECT_EQ(fx::detail::type_name<long long>(), "int64");
  EXPECT_EQ(fx::detail::type_name<std::uint16_t>(), "uint16");
  EXPECT_EQ(fx::detail::type_name<unsigned char>(), "uint8");
  EXPECT_EQ(fx::detail::type_name<bool>(), "bool");
  EXPECT_EQ(fx::detail::type_name<std::complex<double>>(), "complex128");
  struct Pair {
    int a;
    float b[2];
  };
  EXPECT_EQ(fx::detail::type_name<Pair>(), "bytes12");
  EXPECT_EQ(fx::detail::type_size("float64"), 8u);
  EXPECT_EQ(fx::detail::type_size("bytes12"), 12u);
  EXPECT_EQ(fx::detail::type_size("bytes"), 1u);
  EXPECT_EQ(fx::detail::type_size("complex128"), 16u);
}

TEST(Member, RawBuffer) {
  std::vector<float> storage(10);
  std::iota(storage.begin(), storage.end(), 1.0f);
  const auto m = fx::make_member("buf", storage.data(), storage.size());
  EXPECT_EQ(m.type, "float32");
  EXPECT_EQ(m.extents, std::vector<std::size_t>{10});
  EXPECT_EQ(m.bytes, 40u);
  ASSERT_TRUE(m.host);
  EXPECT_EQ(m.host(), reinterpret_cast<std::byte*>(storage.data()));
  const auto bytes = save(m);
  std::fill(storage.begin(), storage.end(), 0.0f);
  m.load(bytes.data());
  EXPECT_EQ(storage[9], 10.0f);
}

TEST(Member, VectorFollowsReallocationButNotResize) {
  std::vector<std::int64_t> v(5, 7);
  const auto m = fx::make_member("v", v);
  EXPECT_EQ(m.type, "int64");
  EXPECT_EQ(m.bytes, 40u);
  v.reserve(1000);  // moves the data, same size: followed
  EXPECT_EQ(m.host(), reinterpret_cast<std::byte*>(v.data()));
  v.push_back(1);
  EXPECT_THROW(m.host(), fx::UsageError);
}

TEST(Member, Scalar) {
  const auto owned = fx::detail::StoreAccess::make();
  fx::DataStore& store = *owned;
  double norm = 2.5;
  store.add_scalar("norm", norm);
  ASSERT_EQ(store.members().size(), 1u);
  EXPECT_TRUE(store.members()[0].extents.empty());
  EXPECT_EQ(store.members()[0].bytes, sizeof(double));
  EXPECT_EQ(store.members()[0].type, "float64");
}

TEST(Member, EveryKindThroughTheStore) {
  const auto owned = fx::detail::StoreAccess::make();
  fx::DataStore& store = *owned;
  std::vector<double> v(4);
  int raw[3] = {1, 2, 3};
  std::int64_t it = 0;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> left("left", 3, 4);
  Kokkos::View<float***> right("right", 2, 3, 4);
  store.add("v", v);
  store.add("raw", raw, 3);
  store.add_scalar("it", it);
  store.add("left", left);
  store.add("right", right);
  ASSERT_EQ(store.members().size(), 5u);
  EXPECT_EQ(store.bytes(), 4 * 8 + 3 * 4 + 8 + 12 * 8 + 24 * 4u);
  const auto& l = store.members()[3];
  EXPECT_EQ(l.layout, "left");
  EXPECT_EQ(l.extents, (std::vector<std::size_t>{3, 4}));
  EXPECT_TRUE(static_cast<bool>(l.host));
  const auto& r = store.members()[4];
  EXPECT_EQ(r.layout, "right");
  EXPECT_EQ(r.extents, (std::vector<std::size_t>{2, 3, 4}));
  EXPECT_THROW(store.add("v", v), fx::UsageError);
  fx::detail::StoreAccess::clear(store);
  EXPECT_TRUE(store.empty());
}

TEST(Member, StridedViewGoesThroughACopyAndLeavesTheGapsAlone) {
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> full("full", 4, 6);
  for (int i = 0; i < 4; ++i) {
    for (int j = 0; j < 6; ++j) full(i, j) = 10 * i + j;
  }
  auto column = Kokkos::subview(full, Kokkos::ALL, 2);  // stride 6
  const auto m = fx::make_member("col", column);
  EXPECT_FALSE(static_cast<bool>(m.host));
  EXPECT_EQ(m.bytes, 4 * sizeof(double));
  EXPECT_EQ(m.extents, std::vector<std::size_t>{4});
  const auto bytes = save(m);
  double values[4];
  std::memcpy(values, bytes.data(), sizeof(values));
  EXPECT_EQ(values[3], 32.0);
  for (int i = 0; i < 4; ++i) full(i, 2) = -1;
  m.load(bytes.data());
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(full(i, 2), 10 * i + 2);
    EXPECT_EQ(full(i, 1), 10 * i + 1);
    EXPECT_EQ(full(i, 3), 10 * i + 3);
  }
}

// The double buffer: a View registered by value keeps the memory it had;
// fx::follow(u) reads and writes whatever u names at the time.
TEST(Member, FollowedViewSeesTheSwap) {
  Kokkos::View<double*, Kokkos::HostSpace> u("u", 4), u_new("u_new", 4);
  Kokkos::deep_copy(u, 1.0);
  Kokkos::deep_copy(u_new, 2.0);
  const fx::Member by_value = fx::make_member("u", u);
  const fx::Member followed = fx::make_member("u", fx::follow(u));
  std::swap(u, u_new);  // u now holds the 2s
  auto as_double = [](const std::vector<std::byte>& b) {
    double d = 0;
    std::memcpy(&d, b.data(), sizeof d);
    return d;
  };
  EXPECT_EQ(as_double(save(by_value)), 1.0);  // the stale buffer
  EXPECT_EQ(as_double(save(followed)), 2.0);
  const std::vector<double> restored = {7, 7, 7, 7};
  followed.load(reinterpret_cast<const std::byte*>(restored.data()));
  EXPECT_EQ(u(3), 7.0);      // into the current handle's memory
  EXPECT_EQ(u_new(3), 1.0);  // the other buffer untouched
  u = Kokkos::View<double*, Kokkos::HostSpace>("u", 5);
  EXPECT_THROW(save(followed), fx::UsageError);  // another shape: register again
}

TEST(Member, FollowedStridedView) {
  Kokkos::View<double**, Kokkos::LayoutRight, Kokkos::HostSpace> full("full", 4, 6);
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 6; ++j) full(i, j) = 10 * i + j;
  auto col = Kokkos::subview(full, Kokkos::ALL, 2);
  const fx::Member m = fx::make_member("col", fx::follow(col));
  const auto b = save(m);
  double d[4];
  std::memcpy(d, b.data(), sizeof d);
  EXPECT_EQ(d[3], 32.0);
  col = Kokkos::subview(full, Kokkos::ALL, 3);
  std::memcpy(d, save(m).data(), sizeof d);
  EXPECT_EQ(d[3], 33.0);
}

TEST(Member, StaticExtentView) {
  Kokkos::View<double* [3], Kokkos::HostSpace> v("v", 5);
  v(4, 2) = 42;
  const auto m = fx::make_member("v", v);
  EXPECT_EQ(m.extents, (std::vector<std::size_t>{5, 3}));
  EXPECT_EQ(m.bytes, 15 * sizeof(double));
  const auto bytes = save(m);
  v(4, 2) = 0;
  m.load(bytes.data());
  EXPECT_EQ(v(4, 2), 42);
}

TEST(Member, RankZeroView) {
  Kokkos::View<double, Kokkos::HostSpace> s("s");
  s() = 3.25;
  const auto m = fx::make_member("s", s);
  EXPECT_TRUE(m.extents.empty());
  EXPECT_EQ(m.bytes, sizeof(double));
}

TEST(Options, SmallParityGroupIsRejected) {
  fx::CheckpointConfig c;
  c.memory.scheme = fx::MemoryScheme::parity;
  c.memory.parity_group = 1;
  EXPECT_THROW(fx::detail::StoreAccess::make(c), fx::CheckpointError);
}

}  // namespace
