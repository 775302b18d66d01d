#pragma once
// mix64: a member's checksum that a device computes as one reduction. Each
// 8-byte little-endian word w_i (the last one zero-padded) becomes
// splitmix64's finalizer of w_i ^ (i + 1) * golden, a bijection of w_i for
// its place i, so any one changed word changes the sum and moved words do
// too; the wrap-around sum of those terms, finished with the byte count,
// is the hash. A sum has no order, so the host (checksum.cpp) and the
// device (DeviceStaging::hash) get the same bits from any split of the work.
#include <Kokkos_Macros.hpp>

#include <cstddef>
#include <cstdint>

namespace fx::detail {

// splitmix64's multipliers and the key's step per word (checksum.cpp's
// AVX2 pass uses them too).
constexpr std::uint64_t kMixMul1 = 0xbf58476d1ce4e5b9ull;
constexpr std::uint64_t kMixMul2 = 0x94d049bb133111ebull;
constexpr std::uint64_t kWordKeyStep = 0x9e3779b97f4a7c15ull;

KOKKOS_INLINE_FUNCTION constexpr std::uint64_t mix64(std::uint64_t x) {
  x = (x ^ (x >> 30)) * kMixMul1;
  x = (x ^ (x >> 27)) * kMixMul2;
  return x ^ (x >> 31);
}

KOKKOS_INLINE_FUNCTION constexpr std::uint64_t word_term(std::uint64_t word, std::uint64_t index) {
  return mix64(word ^ ((index + 1) * kWordKeyStep));
}

// Word `index` of the `n` bytes at `p`: one load where it is whole and
// `aligned`, else byte by byte (little-endian, zero past the end).
KOKKOS_INLINE_FUNCTION std::uint64_t load_word(const unsigned char* p, std::size_t n, std::size_t index,
                                               bool aligned) {
  const std::size_t at = 8 * index;
  if (aligned && at + 8 <= n) return reinterpret_cast<const std::uint64_t*>(p)[index];
  std::uint64_t w = 0;
  for (std::size_t b = 0; b < 8 && at + b < n; ++b) w |= static_cast<std::uint64_t>(p[at + b]) << (8 * b);
  return w;
}

KOKKOS_INLINE_FUNCTION constexpr std::size_t word_count(std::size_t n) { return (n + 7) / 8; }

// The hash from the sum of every word's term.
constexpr std::uint64_t finish_word_sum(std::uint64_t sum, std::size_t n) {
  return mix64(sum ^ mix64(static_cast<std::uint64_t>(n) + 0x6d69783634ull));
}

}  // namespace fx::detail
