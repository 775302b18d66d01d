#pragma once
// Pinned host memory and an execution-space instance of the store's own,
// through which members in device memory (Member::to_host / from_host) are
// copied: the copies run on their own stream beside the app's kernels, and
// pinned memory lets them run at the link's speed: the store's own images
// (Memory::pinned, buffer.hpp), which commits copy into directly, and one
// staging buffer per member for restores from other images (allocated when
// the member is registered). Host-only jobs never touch either.
#include <fx/data_store/member.hpp>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

namespace fx::detail {

// Pinned host memory where Kokkos has it (4.x: SharedHostPinnedSpace is
// page-locked on a GPU backend and plain host memory on host backends).
#if defined(KOKKOS_HAS_SHARED_HOST_PINNED_SPACE)
using PinnedSpace = Kokkos::SharedHostPinnedSpace;
#else
using PinnedSpace = Kokkos::HostSpace;
#endif

// `bytes` of PinnedSpace memory, labelled for Kokkos' tools; throws a
// CheckpointError naming the size when there is none.
std::byte* allocate_pinned_bytes(std::size_t bytes, const char* label);
void free_pinned_bytes(std::byte* p);

class DeviceStaging {
 public:
  DeviceStaging() = default;
  DeviceStaging(const DeviceStaging&) = delete;
  DeviceStaging& operator=(const DeviceStaging&) = delete;
  ~DeviceStaging();

  // Pinned room for member `index` (at least `bytes`), kept between calls,
  // and its checksum's (hash()).
  std::byte* buffer(std::size_t index, std::size_t bytes);
  // Enqueue on space() member `index`'s mix64 checksum (word_hash.hpp) of
  // the `bytes` at `data` (memory space() reads: the device's). Nothing
  // leaves the device but the sum of the words' terms, which lands at the
  // pinned address returned (valid while the staging lives) after fence():
  // finish_word_sum(*sum, bytes) is the checksum.
  const std::uint64_t* hash(std::size_t index, const std::byte* data, std::size_t bytes);
  // The instance the copies run on (created at the first call).
  const DeviceSpace& space();
  // Wait for the app's kernels on the default instance: a copy must not
  // read a member a kernel is still writing.
  static void after_app_kernels();
  // Wait for every copy enqueued on space() (not a global fence).
  void fence();
  bool used() const { return space_.has_value(); }
  // Seconds spent in fence() (any thread) since the last call.
  double take_waited_seconds() { return 1e-9 * static_cast<double>(waited_ns_.exchange(0)); }

 private:
  struct Pinned {
    std::byte* data = nullptr;
    std::size_t bytes = 0;
  };
  static void free_pinned(Pinned& p);
  void reserve_sums(std::size_t count);
  std::vector<Pinned> buffers_;
  // Per member: the device's sum and its copy in pinned memory (those
  // outgrown are kept: a thread may still read its sum there).
  Kokkos::View<std::uint64_t*, DeviceSpace::memory_space> sums_;
  std::vector<Pinned> sums_host_;
  std::optional<DeviceSpace> space_;
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  void* stream_ = nullptr;  // the non-blocking stream space_ runs on (ours to destroy)
#endif
  std::atomic<std::int64_t> waited_ns_{0};
};

}  // namespace fx::detail
