#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace fx::detail {

// dst ^= src over n bytes, a word at a time (the compiler vectorises it).
inline void xor_into(std::byte* dst, const std::byte* src, std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    std::uint64_t a, b;
    std::memcpy(&a, dst + i, 8);
    std::memcpy(&b, src + i, 8);
    a ^= b;
    std::memcpy(dst + i, &a, 8);
  }
  for (; i < n; ++i) dst[i] ^= src[i];
}

}  // namespace fx::detail
