#include "checksum.hpp"

#include <xxhash.h>
#if defined(__x86_64__) && __has_include(<xxh_x86dispatch.h>)
#include <xxh_x86dispatch.h>  // XXH3 with the best vector unit found at run time
#endif
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cstring>
#include <memory>

#include "word_hash.hpp"

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

#if defined(__x86_64__)
// A 64-bit lane's bits (the intrinsics take signed lanes).
long long lane(std::uint64_t bits) { return static_cast<long long>(bits); }

// mix64's terms four words at a time with AVX2 (which has no 64-bit
// multiply: three 32-bit ones).
__attribute__((target("avx2"))) __m256i mul64(__m256i a, __m256i b) {
  const __m256i cross = _mm256_add_epi64(_mm256_mul_epu32(_mm256_srli_epi64(a, 32), b),
                                         _mm256_mul_epu32(a, _mm256_srli_epi64(b, 32)));
  return _mm256_add_epi64(_mm256_mul_epu32(a, b), _mm256_slli_epi64(cross, 32));
}

__attribute__((target("avx2"))) __m256i mix64x4(__m256i x) {
  x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 30)), _mm256_set1_epi64x(lane(kMixMul1)));
  x = mul64(_mm256_xor_si256(x, _mm256_srli_epi64(x, 27)), _mm256_set1_epi64x(lane(kMixMul2)));
  return _mm256_xor_si256(x, _mm256_srli_epi64(x, 31));
}

// The sum of the terms of `words` whole words at `u`, the first word `first`.
__attribute__((target("avx2"))) std::uint64_t word_sum_avx2(const unsigned char* u, std::size_t words,
                                                            std::uint64_t first) {
  std::uint64_t keys[4];
  for (std::uint64_t k = 0; k < 4; ++k) keys[k] = (first + k + 1) * kWordKeyStep;
  __m256i key = _mm256_set_epi64x(lane(keys[3]), lane(keys[2]), lane(keys[1]), lane(keys[0]));
  const __m256i step = _mm256_set1_epi64x(lane(4 * kWordKeyStep));
  __m256i sum = _mm256_setzero_si256();
  for (std::size_t i = 0; i + 4 <= words; i += 4) {
    const __m256i w = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(u + 8 * i));
    sum = _mm256_add_epi64(sum, mix64x4(_mm256_xor_si256(w, key)));
    key = _mm256_add_epi64(key, step);
  }
  std::uint64_t lanes[4];
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(lanes), sum);
  return lanes[0] + lanes[1] + lanes[2] + lanes[3];
}
#endif

// The sum of mix64's terms for the `n` bytes at `p`, whose first word is
// word `first` of the member.
std::uint64_t word_sum(const std::byte* p, std::size_t n, std::size_t first) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  std::uint64_t sum = 0;
  std::size_t i = 0;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2")) {
    i = n / 32 * 4;
    sum = word_sum_avx2(u, i, first);
  }
#endif
  const std::size_t whole = n / 8;
  for (; i < whole; ++i) {
    std::uint64_t w;
    std::memcpy(&w, u + 8 * i, 8);
    sum += word_term(w, first + i);
  }
  if (whole < word_count(n))
    sum += word_term(load_word(u, n, whole, false), first + whole);  // the last, partial
  return sum;
}

// A streamed copy, a chunk at a time, each chunk hashed (`take(chunk,
// bytes, offset)`) while it is still in cache.
template <class Take>
void stream_copy_chunks(std::byte* dst, const std::byte* src, std::size_t n, Take take) {
  for (std::size_t off = 0; off < n; off += kChunk) {
    const std::size_t c = std::min(kChunk, n - off);
    stream_copy(dst + off, src + off, c);
    take(src + off, c, off);
  }
#if defined(__x86_64__)
  _mm_sfence();  // streamed stores visible before anyone (MPI) reads them
#endif
}

}  // namespace

const char* hash_name(HashKind kind) { return kind == HashKind::mix64 ? "mix64" : "xxh3"; }

std::uint64_t hash_bytes(const void* data, std::size_t n) { return XXH3_64bits(data, n); }

std::uint64_t hash_bytes(HashKind kind, const void* data, std::size_t n) {
  if (kind == HashKind::xxh3) return XXH3_64bits(data, n);
  return finish_word_sum(word_sum(static_cast<const std::byte*>(data), n, 0), n);
}

std::uint64_t copy_and_hash(HashKind kind, std::byte* dst, const std::byte* src, std::size_t n) {
  if (n < kStreamFrom) {
    if (n > 0) std::memcpy(dst, src, n);
    return hash_bytes(kind, src, n);
  }
  if (kind == HashKind::mix64) {
    std::uint64_t sum = 0;  // kChunk is whole words
    stream_copy_chunks(dst, src, n, [&](const std::byte* p, std::size_t c, std::size_t off) {
      sum += word_sum(p, c, off / 8);
    });
    return finish_word_sum(sum, n);
  }
  std::unique_ptr<XXH3_state_t, StateFree> st(XXH3_createState());
  XXH3_64bits_reset(st.get());
  stream_copy_chunks(dst, src, n, [&](const std::byte* p, std::size_t c, std::size_t) {
    XXH3_64bits_update(st.get(), p, c);
  });
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
