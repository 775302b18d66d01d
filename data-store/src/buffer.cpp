#include "buffer.hpp"

#include "device_staging.hpp"

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

void Buffer::Free::operator()(std::byte* p) const {
  if (mapped > 0)
    munmap(p, mapped);
  else if (kind == Memory::pinned)
    free_pinned_bytes(p);
  else
    std::free(p);
}

void Buffer::reset_touched(std::size_t n, Memory m) {
  reset(n, m);
  if (capacity_ > 0) std::memset(data_.get(), 0, capacity_);
}

void Buffer::reset(std::size_t n, Memory m) {
  // A mapped file is rewritten in fresh memory: its copy-on-write faults,
  // a page at a time, would cost more than huge pages.
  const Free& now = data_.get_deleter();
  if (n > capacity_ || now.mapped > 0 || (n > 0 && now.kind != m)) {
    data_ = std::unique_ptr<std::byte, Free>();
    capacity_ = size_ = 0;
    if (n > 0) allocate(n, m);
  }
  size_ = n;
}

void Buffer::allocate(std::size_t n, Memory m) {
  // Large buffers on 2 MiB boundaries so transparent huge pages can back
  // them: fewer page faults and TLB misses in the copy loops.
  const std::size_t align = n >= kHuge ? kHuge : kPage;
  const std::size_t cap = (n + align - 1) / align * align;
  std::byte* p = nullptr;
  if (m == Memory::pinned) {
    p = allocate_pinned_bytes(cap, "fx_image");  // page-locked by the backend
  } else {
    p = static_cast<std::byte*>(std::aligned_alloc(align, cap));
    if (!p) throw std::bad_alloc();
    if (align == kHuge) advise_huge_pages(p, cap);
  }
  data_ = std::unique_ptr<std::byte, Free>(p, Free{0, m});
  capacity_ = cap;
}

bool Buffer::map_file(int fd, std::size_t n) {
  if (n == 0) {
    reset(0);
    return true;
  }
  // The bytes past the file's end in its last page read as zeros; pages
  // wholly past it would fault, so the capacity stops at that page.
  const std::size_t cap = (n + kPage - 1) / kPage * kPage;
  void* p = mmap(nullptr, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return false;
  data_ = std::unique_ptr<std::byte, Free>(static_cast<std::byte*>(p), Free{cap, Memory::pageable});
  size_ = n;
  capacity_ = cap;
  return true;
}

void Buffer::grow(std::size_t n) {
  if (n <= capacity_) {
    size_ = std::max(size_, n);
    return;
  }
  Buffer bigger;
  bigger.reset(n, pinned() ? Memory::pinned : Memory::pageable);
  if (size_ > 0) std::memcpy(bigger.data(), data(), size_);
  *this = std::move(bigger);
}

void Buffer::release() {
  data_ = std::unique_ptr<std::byte, Free>();
  size_ = capacity_ = 0;
}

}  // namespace fx::detail
