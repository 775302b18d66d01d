#include "buffer.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>

namespace fx::detail {
namespace {
constexpr std::size_t kPage = 4096;
constexpr std::size_t kHuge = std::size_t{2} << 20;
}  // namespace

void advise_huge_pages(void* p, std::size_t n) {
  const auto begin = reinterpret_cast<std::uintptr_t>(p);
  const std::uintptr_t first = (begin + kHuge - 1) / kHuge * kHuge;
  const std::uintptr_t last = (begin + n) / kHuge * kHuge;
  if (last > first) madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE);
}

void Buffer::Free::operator()(std::byte* p) const { std::free(p); }

void Buffer::reset(std::size_t n) {
  if (n > capacity_) {
    // Large buffers on 2 MiB boundaries so transparent huge pages can back
    // them: fewer page faults and TLB misses in the copy loops.
    const std::size_t align = n >= kHuge ? kHuge : kPage;
    const std::size_t cap = (n + align - 1) / align * align;
    data_.reset();
    capacity_ = 0;
    void* p = std::aligned_alloc(align, cap);
    if (!p) throw std::bad_alloc();
    if (align == kHuge) advise_huge_pages(p, cap);
    data_.reset(static_cast<std::byte*>(p));
    capacity_ = cap;
  }
  size_ = n;
}

void Buffer::grow(std::size_t n) {
  if (n <= capacity_) {
    size_ = std::max(size_, n);
    return;
  }
  Buffer bigger(n);
  if (size_ > 0) std::memcpy(bigger.data(), data(), size_);
  *this = std::move(bigger);
}

void Buffer::release() {
  data_.reset();
  size_ = capacity_ = 0;
}

}  // namespace fx::detail
