// Members in device memory (Member::to_host / from_host) through the data
// store's pinned staging buffers and copy instance. The Views live in the
// default memory space: device memory on a GPU build, where make_member
// chooses this path itself; on a host build the same path is forced
// (detail::staged_member), so CI runs the code a GPU runs.
#include <fx/data_store/member_shape.hpp>
#include <fx/data_store/store.hpp>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>
#include <vector>

#include "buffer.hpp"
#include "device_staging.hpp"
#include "image.hpp"

namespace {

using Field = Kokkos::View<double***, Kokkos::LayoutRight>;
using Grid = Kokkos::View<int**, Kokkos::LayoutLeft>;
constexpr bool kOnDevice =
    !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;

template <class V>
fx::Member device_member(const std::string& name, const V& v) {
  if constexpr (kOnDevice) return fx::make_member(name, v);
  return fx::detail::staged_member(name, v, [v]() -> const V& { return v; });
}

template <class V>
std::int64_t ext(const V& v, int d) {
  return static_cast<std::int64_t>(v.extent(d));
}

void fill(const Field& f, double seed) {
  Kokkos::parallel_for(
      "fill",
      Kokkos::MDRangePolicy<Kokkos::Rank<3>, Kokkos::IndexType<std::int64_t>>(
          {0, 0, 0}, {ext(f, 0), ext(f, 1), ext(f, 2)}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j, const std::int64_t k) {
        f(i, j, k) = seed + i * 1e4 + j * 1e2 + k * 0.5;
      });
  Kokkos::fence();
}
void fill(const Grid& g, int seed) {
  Kokkos::parallel_for(
      "fill",
      Kokkos::MDRangePolicy<Kokkos::Rank<2>, Kokkos::IndexType<std::int64_t>>({0, 0}, {ext(g, 0), ext(g, 1)}),
      KOKKOS_LAMBDA(const std::int64_t i, const std::int64_t j) {
        g(i, j) = static_cast<int>(seed + 100 * i + j);
      });
  Kokkos::fence();
}
void fill(const Kokkos::View<double*>& a) {
  Kokkos::parallel_for(
      "fill", static_cast<int>(a.extent(0)), KOKKOS_LAMBDA(const int i) { a(i) = 0.25 * i - 3; });
  Kokkos::fence();
}
template <class V>
bool same_bits(const V& a, const V& b) {
  auto ha = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a);
  auto hb = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), b);
  return std::memcmp(ha.data(), hb.data(), ha.span() * sizeof(typename V::value_type)) == 0;
}

struct State {
  Field field{"field", 9, 7, 5};
  Grid grid{"grid", 6, 4};
  std::vector<fx::Member> members;
  explicit State(double seed) {
    fill(field, seed);
    fill(grid, static_cast<int>(seed));
    members.push_back(device_member("field", field));
    members.push_back(device_member("grid", grid));
  }
};

struct Packed {
  fx::detail::ImageInfo info;
  fx::detail::Buffer image;
};

Packed pack(const State& s, fx::detail::DeviceStaging& staging) {
  Packed p;
  p.info = fx::detail::layout_image(s.members, 30, 2, 0, 1);
  p.image.reset(p.info.total_bytes);
  fx::detail::pack_image(s.members, p.info, p.image.data(), &staging);
  return p;
}

TEST(DeviceMember, MakeMemberTakesTheStagedPathForDeviceViews) {
  Field f("f", 3, 4, 5);
  const fx::Member m = fx::make_member("f", f);
  EXPECT_EQ(static_cast<bool>(m.host), !kOnDevice);
  EXPECT_EQ(static_cast<bool>(m.to_host), kOnDevice);
  EXPECT_EQ(static_cast<bool>(m.from_host), kOnDevice);
  EXPECT_EQ(m.bytes, 3u * 4 * 5 * sizeof(double));
  const fx::Member followed = fx::make_member("f", fx::follow(f));
  EXPECT_EQ(static_cast<bool>(followed.to_host), kOnDevice);
  const fx::Member forced = fx::detail::staged_member("g", Grid("g", 2, 3), [] { return Grid(); });
  EXPECT_FALSE(forced.host);
  EXPECT_EQ(forced.layout, "left");
  EXPECT_EQ(forced.extents, (std::vector<std::size_t>{2, 3}));
}

TEST(DeviceMember, ImageRoundTripThroughPinnedStagingIsBitIdentical) {
  fx::detail::DeviceStaging staging;
  State a(1.25);
  const Packed p = pack(a, staging);
  EXPECT_TRUE(staging.used());
  // The image holds the same bytes as one packed through save() (no staging).
  Packed q;
  q.info = fx::detail::layout_image(a.members, 30, 2, 0, 1);
  q.image.reset(q.info.total_bytes);
  fx::detail::pack_image(a.members, q.info, q.image.data());
  EXPECT_EQ(p.info.digest(), q.info.digest());
  EXPECT_EQ(0, std::memcmp(p.image.data(), q.image.data(), p.info.total_bytes));

  State b(-7.0);
  const auto back =
      fx::detail::read_header(p.image.data(), p.info.total_bytes, p.image.size(), "device image");
  EXPECT_EQ(back.members[1].layout, "left");
  fx::detail::unpack_image(back, p.image.data(), b.members, "device image", &staging);
  EXPECT_TRUE(same_bits(a.field, b.field));
  EXPECT_TRUE(same_bits(a.grid, b.grid));
}

// fx::resizable on a device View: the extents at the commit travel with the
// image; the restore reallocates the View (in device memory) before the
// pinned copy goes to it.
using Atoms = Kokkos::View<double* [3]>;
// (Not in the test's body: nvcc takes no device lambda in a private member function.)
void fill(const Atoms& x) {
  Kokkos::parallel_for(
      "fill", static_cast<int>(x.extent(0)), KOKKOS_LAMBDA(const int i) {
        for (int c = 0; c < 3; ++c) x(i, c) = 0.5 * i + c;
      });
  Kokkos::fence();
}

TEST(DeviceMember, ResizableViewComesBackAtTheCommittedExtent) {
  Atoms x("atoms", 11);
  fill(x);
  auto shape = [&x] { return std::vector<std::size_t>{x.extent(0), 3}; };
  auto reshape = [&x](const std::vector<std::size_t>& e) { fx::detail::reshape_view(x, e, "atoms"); };
  std::vector<fx::Member> members{kOnDevice
                                      ? fx::make_member("atoms", fx::resizable(x))
                                      : fx::detail::resizable_staged_member("atoms", &x, shape, reshape)};
  EXPECT_FALSE(members[0].host);
  fx::detail::DeviceStaging staging;
  fx::detail::refresh(members[0]);
  auto info = fx::detail::layout_image(members, 30, 2, 0, 1);
  fx::detail::Buffer image;
  image.reset(info.total_bytes);
  fx::detail::pack_image(members, info, image.data(), &staging);
  const Atoms want("want", 11);
  Kokkos::deep_copy(want, x);
  x = Atoms("atoms", 4);  // the app's atoms moved on
  fx::detail::unpack_image(info, image.data(), members, "resizable device image", &staging);
  ASSERT_EQ(x.extent(0), 11u);
  EXPECT_TRUE(same_bits(x, want));
}

// A device member's checksum (mix64) is taken on the device once its bytes
// are there: a damaged member is found and named after the copy. One with
// an XXH3 checksum (an image a host build wrote) is checked on the host
// before it goes to the device.
TEST(DeviceMember, DamagedBytesAreRefused) {
  fx::detail::DeviceStaging staging;
  State a(2.0);
  Packed p = pack(a, staging);
  const std::size_t at = p.info.payload_offset + p.info.members[0].offset + 17;
  p.image.data()[at] ^= std::byte{0x40};
  State b(5.0);
  try {
    fx::detail::unpack_image(p.info, p.image.data(), b.members, "copy of rank 2", &staging);
    ADD_FAILURE() << "no CheckpointError";
  } catch (const fx::CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("copy of rank 2: checksum mismatch in member 'field'"),
              std::string::npos)
        << e.what();
  }
  p.image.data()[at] ^= std::byte{0x40};
  auto& field = p.info.members[0];
  field.hash_kind = fx::detail::HashKind::xxh3;
  field.hash = fx::detail::hash_bytes(p.image.data() + p.info.payload_offset + field.offset, field.bytes);
  fx::detail::write_header(p.info, p.image.data());
  p.image.data()[at] ^= std::byte{0x40};
  State c(5.0);
  const State untouched(5.0);
  EXPECT_THROW(fx::detail::unpack_image(p.info, p.image.data(), c.members, "x", &staging),
               fx::CheckpointError);
  EXPECT_TRUE(same_bits(c.field, untouched.field));  // failed its check on the host: not loaded
}

// Every device member's checksum is a reduction on the store's instance,
// at the commit and at the restore (Kokkos' tool hooks count them); an
// image packed without staging (through save()) has the same checksums,
// taken on the host.
std::vector<std::string> reductions;
void record_reduce(const char* name, std::uint32_t, std::uint64_t*) { reductions.emplace_back(name); }

TEST(DeviceMember, TheDeviceTakesTheChecksums) {
  fx::detail::DeviceStaging staging;
  State a(6.0);
  reductions.clear();
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(&record_reduce);
  const Packed p = pack(a, staging);
  const auto at_commit = std::count(reductions.begin(), reductions.end(), "fx_checksum");
  State b(0.0);
  fx::detail::unpack_image(p.info, p.image.data(), b.members, "device image", &staging);
  const auto at_restore = std::count(reductions.begin(), reductions.end(), "fx_checksum") - at_commit;
  Kokkos::Tools::Experimental::set_begin_parallel_reduce_callback(nullptr);
  EXPECT_EQ(at_commit, 2);
  EXPECT_EQ(at_restore, 2);
  for (const auto& r : p.info.members) EXPECT_EQ(r.hash_kind, fx::detail::HashKind::mix64) << r.name;
  fx::detail::verify_payload(p.info, p.image.data(), "device image");  // the host's mix64 agrees
  EXPECT_TRUE(same_bits(a.field, b.field));
}

// An asynchronous commit's during_next_step member: a device snapshot is
// taken before pack_image_now returns, and its copy to the host is in
// flight; the image is complete (header written) once the pending copies
// are finished, and holds the state at the commit although the app wrote
// the View right after the commit.
TEST(DeviceMember, DeferredCopyHoldsTheStateAtTheCommit) {
  fx::detail::DeviceStaging staging;
  State a(3.0);
  for (auto& m : a.members) m.snapshot = fx::Snapshot::during_next_step;
  Packed p;
  p.info = fx::detail::layout_image(a.members, 40, 3, 0, 1);
  p.image.reset(p.info.total_bytes);
  const auto later = fx::detail::pack_image_now(a.members, p.info, p.image.data(), true, &staging);
  ASSERT_EQ(later.size(), 2u);
  EXPECT_TRUE(later[0].staged);
  const State committed(3.0);
  fill(a.field, 99.0);  // the app's next kernels
  fx::detail::finish_pending_copies(later, p.info, p.image.data(), true, &staging);
  const auto back = fx::detail::read_header(p.image.data(), p.info.total_bytes, p.image.size(), "deferred");
  fx::detail::verify_payload(back, p.image.data(), "deferred");
  State b(0.0);
  fx::detail::unpack_image(back, p.image.data(), b.members, "deferred", &staging);
  EXPECT_TRUE(same_bits(b.field, committed.field));
}

// A pinned image (the store's, when a member lives on the device) takes the
// device copies straight in, and a restore sends them from it: no staging
// buffer and no host copy between the device and the image (issue 43,
// item 1). Kokkos' tool hooks see each copy's ends and every allocation (C
// callbacks: counters of the test's own).
struct CopyEnds {
  const void* dst;
  const void* src;
  std::uint64_t bytes;
};
std::vector<CopyEnds> copies;
int staging_allocations = 0;

void record_copy(Kokkos::Tools::SpaceHandle, const char*, const void* dst, Kokkos::Tools::SpaceHandle,
                 const char*, const void* src, std::uint64_t bytes) {
  copies.push_back({dst, src, bytes});
}
void count_staging(const Kokkos::Tools::SpaceHandle, const char* label, const void*, const std::uint64_t) {
  if (std::string_view(label) == "fx_staging") ++staging_allocations;
}

bool inside(const void* p, const fx::detail::Buffer& b) {
  const auto* c = static_cast<const std::byte*>(p);
  return c >= b.data() && c < b.data() + b.size();
}

TEST(DeviceMember, APinnedImageTakesTheDeviceCopiesWithoutStaging) {
  for (const bool defer : {false, true}) {
    fx::detail::DeviceStaging staging;
    State a(4.0);
    for (auto& m : a.members) m.snapshot = defer ? fx::Snapshot::during_next_step : fx::Snapshot::at_commit;
    Packed p;
    p.info = fx::detail::layout_image(a.members, 50, 4, 0, 1);
    p.image.reset(p.info.total_bytes, fx::detail::Memory::pinned);
    ASSERT_TRUE(p.image.pinned());
    copies.clear();
    staging_allocations = 0;
    Kokkos::Tools::Experimental::set_begin_deep_copy_callback(&record_copy);
    Kokkos::Tools::Experimental::set_allocate_data_callback(&count_staging);
    const auto later = fx::detail::pack_image_now(a.members, p.info, p.image.data(), defer, &staging, true);
    fx::detail::finish_pending_copies(later, p.info, p.image.data(), true, &staging);
    const std::vector<CopyEnds> packed = copies;
    copies.clear();
    State b(-1.0);
    fx::detail::unpack_image(p.info, p.image.data(), b.members, "pinned image", &staging, true);
    Kokkos::Tools::Experimental::set_begin_deep_copy_callback(nullptr);
    Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
    EXPECT_EQ(staging_allocations, 0) << "defer " << defer;
    int to_image = 0, from_image = 0;
    for (const auto& c : packed) to_image += inside(c.dst, p.image) ? 1 : 0;
    for (const auto& c : copies) from_image += inside(c.src, p.image) ? 1 : 0;
    EXPECT_EQ(to_image, 2) << "defer " << defer;  // both members, device to image
    EXPECT_EQ(from_image, 2) << "defer " << defer;
    EXPECT_TRUE(same_bits(a.field, b.field));
    EXPECT_TRUE(same_bits(a.grid, b.grid));
    // The same bytes as an image packed through the staging buffers.
    const Packed q = pack(a, staging);
    EXPECT_EQ(p.info.digest(), q.info.digest());
  }
}

// fx::follow: the restore goes into whichever View the handle names then.
TEST(DeviceMember, FollowedViewRestoresIntoTheCurrentBuffer) {
  fx::detail::DeviceStaging staging;
  Field u("u", 4, 4, 4), v("v", 4, 4, 4);
  fill(u, 1.0);
  fill(v, 2.0);
  std::vector<fx::Member> members;
  if constexpr (kOnDevice)
    members.push_back(fx::make_member("u", fx::follow(u)));
  else
    members.push_back(fx::detail::staged_member("u", u, [p = &u]() -> Field& { return *p; }));
  fx::detail::ImageInfo info = fx::detail::layout_image(members, 5, 1, 0, 1);
  fx::detail::Buffer image(info.total_bytes);
  fx::detail::pack_image(members, info, image.data(), &staging);
  const Field committed = u;
  std::swap(u, v);  // the double buffer moves on
  fill(u, 8.0);
  fx::detail::unpack_image(info, image.data(), members, "followed", &staging);
  Field ref("ref", 4, 4, 4);
  fill(ref, 1.0);
  EXPECT_TRUE(same_bits(u, ref));
  EXPECT_NE(u.data(), committed.data());
}

// A static device View: its bytes are read through a host copy, and a
// restore reallocates it and writes it back to the device.
TEST(DeviceMember, StaticDeviceViewRoundTrip) {
  Kokkos::View<double*> a("A_val", 1000);
  fill(a);
  const fx::StaticMember out = fx::make_static_member("A_val", a);
  const auto [bytes, n] = out.contents();
  ASSERT_EQ(n, 1000 * sizeof(double));
  std::vector<std::byte> sent(bytes, bytes + n);

  Kokkos::View<double*> b("A_val", 3);
  const fx::StaticMember in = fx::make_static_member("A_val", b);
  std::byte* room = in.resize(n);
  std::memcpy(room, sent.data(), n);
  if (in.loaded) in.loaded();
  EXPECT_EQ(static_cast<bool>(in.loaded), kOnDevice);
  ASSERT_EQ(b.extent(0), 1000u);
  EXPECT_TRUE(same_bits(a, b));
}

TEST(DeviceStaging, BuffersAreKeptAndGrown) {
  fx::detail::DeviceStaging staging;
  EXPECT_FALSE(staging.used());
  std::byte* p = staging.buffer(0, 4096);
  EXPECT_EQ(staging.buffer(0, 100), p);
  std::byte* q = staging.buffer(1, 64);
  EXPECT_NE(q, p);
  std::memset(staging.buffer(0, 1 << 20), 1, 1 << 20);  // grown: writable throughout
  staging.fence();                                      // no instance yet: nothing to wait for
  EXPECT_FALSE(staging.used());
}

}  // namespace
