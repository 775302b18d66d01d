#include "checksum.hpp"

#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>  // XXH3 with the best vector unit found at run time
#endif
#if defined(__x86_64__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>

namespace fx::detail {
namespace {

constexpr std::size_t kChunk = std::size_t{128} << 10;     // well inside L2
constexpr std::size_t kStreamFrom = std::size_t{1} << 20;  // below: plain memcpy

struct StateFree {
  void operator()(XXH3_state_t* s) const { XXH3_freeState(s); }
};

// Non-temporal copy: no read-for-ownership of the destination, which a
// checkpoint does not read again soon.
void stream_copy(std::byte* dst, const std::byte* src, std::size_t n) {
#if defined(__x86_64__)
  const std::size_t head = std::min(n, (16 - reinterpret_cast<std::uintptr_t>(dst) % 16) % 16);
  std::memcpy(dst, src, head);
  std::size_t i = head;
  for (; i + 64 <= n; i += 64) {
    const __m128i a = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i));
    const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 16));
    const __m128i c = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 32));
    const __m128i d = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i + 48));
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i), a);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 16), b);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 32), c);
    _mm_stream_si128(reinterpret_cast<__m128i*>(dst + i + 48), d);
  }
  std::memcpy(dst + i, src + i, n - i);
#else
  std::memcpy(dst, src, n);
#endif
}

}  // namespace

std::uint64_t hash_bytes(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

std::uint64_t copy_and_hash(std::byte* dst, const std::byte* src, std::size_t n) {
  if (n == 0) return XXH3_64bits(nullptr, 0);
  if (n < kStreamFrom) {
    std::memcpy(dst, src, n);
    return XXH3_64bits(src, n);
  }
  std::unique_ptr<XXH3_state_t, StateFree> st(XXH3_createState());
  XXH3_64bits_reset(st.get());
  for (std::size_t off = 0; off < n; off += kChunk) {
    const std::size_t c = std::min(kChunk, n - off);
    stream_copy(dst + off, src + off, c);
    XXH3_64bits_update(st.get(), src + off, c);  // the source is in cache
  }
#if defined(__x86_64__)
  _mm_sfence();  // streamed stores visible before anyone (MPI) reads them
#endif
  return XXH3_64bits_digest(st.get());
}

std::uint64_t copy_then_hash(std::byte* dst, const std::byte* src, std::size_t n) {
  std::unique_ptr<XXH3_state_t, StateFree> st(XXH3_createState());
  XXH3_64bits_reset(st.get());
  for (std::size_t off = 0; off < n; off += kChunk) {
    const std::size_t c = std::min(kChunk, n - off);
    std::memcpy(dst + off, src + off, c);
    XXH3_64bits_update(st.get(), dst + off, c);
  }
  return XXH3_64bits_digest(st.get());
}

std::uint64_t combine_hashes(const std::vector<std::uint64_t>& hashes) {
  return XXH3_64bits(hashes.data(), hashes.size() * sizeof(std::uint64_t));
}

}  // namespace fx::detail
