#pragma once
// A byte buffer that is never zero-filled: a checkpoint copy overwrites it
// anyway, and recycling buffers between versions keeps page faults out of
// the commit path. Plain memory is page-aligned; pinned memory has the
// backend's alignment (Kokkos: at least 64 bytes, what member offsets keep).
#include <cstddef>
#include <memory>

namespace fx::detail {

// Where a buffer's bytes live: plain memory, or page-locked memory (a GPU
// backend's pinned host memory, device_staging.cpp) that device copies
// land in at the link's speed, with no staging copy in between.
enum class Memory { pageable, pinned };

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(std::size_t n) { reset(n); }

  // Make room for n bytes in memory of kind m. Contents are unspecified
  // afterwards: growing (or changing the kind) reallocates without copying.
  void reset(std::size_t n, Memory m = Memory::pageable);
  // Make room for n bytes, keeping the current contents.
  void grow(std::size_t n);
  // reset(n), every page written once: the page faults (and huge-page
  // compaction) happen now, not in the first copy into it.
  void reset_touched(std::size_t n, Memory m = Memory::pageable);
  void release();
  // Map the first n bytes of the open file fd, private and writable (copy
  // on write): its pages are read where they are, never copied, and the
  // file may be closed or removed meanwhile. The next reset() allocates
  // afresh. False (errno set) when mmap fails.
  bool map_file(int fd, std::size_t n);
  std::byte* data() { return data_.get(); }
  const std::byte* data() const { return data_.get(); }
  std::size_t size() const { return size_; }
  std::size_t capacity() const { return capacity_; }
  bool pinned() const { return data_ && data_.get_deleter().kind == Memory::pinned; }

 private:
  void allocate(std::size_t n, Memory m);
  struct Free {
    Free() noexcept : Free(0, Memory::pageable) {}
    Free(std::size_t bytes, Memory m) noexcept : mapped(bytes), kind(m) {}
    std::size_t mapped;  // bytes mapped by map_file, else 0 (allocated)
    Memory kind;
    void operator()(std::byte* p) const;
  };
  std::unique_ptr<std::byte, Free> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

// Ask for transparent huge pages on the 2 MiB-aligned part of [p, p + n)
// (only pages not yet touched are affected; a hint, errors ignored).
void advise_huge_pages(void* p, std::size_t n);

}  // namespace fx::detail
