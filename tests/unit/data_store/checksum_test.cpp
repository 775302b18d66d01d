// The two checksum kinds: mix64 (word_hash.hpp) gives the same bits from
// the device's reduction (DeviceStaging::hash, on the store's instance)
// and from the host's passes, at any size and alignment, and changes with
// any changed or moved word.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <vector>

#include "checksum.hpp"
#include "device_staging.hpp"
#include "word_hash.hpp"

namespace {

using fx::detail::HashKind;

std::vector<std::byte> random_bytes(std::size_t n, unsigned seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::byte> v(n);
  for (auto& b : v) b = static_cast<std::byte>(gen() & 0xff);
  return v;
}

// `bytes` in the device's memory (the default space: device memory on a GPU build).
Kokkos::View<std::byte*> on_device(const std::vector<std::byte>& bytes) {
  Kokkos::View<std::byte*> d("bytes", bytes.size() + 8);
  auto h = Kokkos::create_mirror_view(d);
  std::memcpy(h.data(), bytes.data(), bytes.size());
  Kokkos::deep_copy(d, h);
  return d;
}

TEST(Mix64, DeviceAndHostGiveTheSameChecksum) {
  fx::detail::DeviceStaging staging;
  const std::size_t sizes[] = {
      0, 1, 7, 8, 9, 63, 64, 65, 4097, (std::size_t{128} << 10) + 3, (std::size_t{3} << 20) + 13};
  for (const std::size_t n : sizes) {
    const auto host = random_bytes(n + 1, static_cast<unsigned>(n));
    const auto dev = on_device(host);
    for (const std::size_t skew : {0, 1}) {  // an aligned and an unaligned start
      if (skew > n) continue;
      const std::size_t len = n - skew;
      const std::uint64_t* sum = staging.hash(skew, dev.data() + skew, len);
      staging.fence();
      const std::uint64_t device = fx::detail::finish_word_sum(*sum, len);
      EXPECT_EQ(device, fx::detail::hash_bytes(HashKind::mix64, host.data() + skew, len)) << n << "+" << skew;
      std::vector<std::byte> copy(len + 1);
      EXPECT_EQ(device, fx::detail::copy_and_hash(HashKind::mix64, copy.data(), host.data() + skew, len))
          << n << "+" << skew;
      EXPECT_EQ(0, std::memcmp(copy.data(), host.data() + skew, len));
    }
  }
}

TEST(Mix64, AnyChangedOrMovedWordChangesIt) {
  auto bytes = random_bytes(1024, 7);
  const auto h = [&] { return fx::detail::hash_bytes(HashKind::mix64, bytes.data(), bytes.size()); };
  const std::uint64_t base = h();
  std::set<std::uint64_t> seen{base};
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      bytes[i] ^= std::byte(1u << bit);
      seen.insert(h());
      bytes[i] ^= std::byte(1u << bit);
    }
  }
  EXPECT_EQ(seen.size(), 1 + 8 * bytes.size());  // every flipped bit: a checksum of its own
  std::swap_ranges(bytes.begin(), bytes.begin() + 8, bytes.begin() + 64);  // two words moved
  EXPECT_NE(h(), base);
  // Zero bytes appended are not the same bytes.
  std::vector<std::byte> zeros(16, std::byte{0});
  EXPECT_NE(fx::detail::hash_bytes(HashKind::mix64, zeros.data(), 8),
            fx::detail::hash_bytes(HashKind::mix64, zeros.data(), 16));
  EXPECT_NE(fx::detail::hash_bytes(HashKind::mix64, zeros.data(), 16),
            fx::detail::hash_bytes(HashKind::xxh3, zeros.data(), 16));
}

TEST(Mix64, SumsOfEarlierCallsStayReadable) {
  fx::detail::DeviceStaging staging;
  const auto host = random_bytes(256, 3);
  const auto dev = on_device(host);
  const std::uint64_t* first = staging.hash(0, dev.data(), host.size());
  staging.fence();
  const std::uint64_t want = fx::detail::finish_word_sum(*first, host.size());
  (void)staging.hash(40, dev.data(), 8);  // grows the sums
  staging.fence();
  EXPECT_EQ(fx::detail::finish_word_sum(*first, host.size()), want);
  EXPECT_EQ(want, fx::detail::hash_bytes(HashKind::mix64, host.data(), host.size()));
}

}  // namespace
