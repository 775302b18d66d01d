#include "device_staging.hpp"

#include <fx/error.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "word_hash.hpp"

namespace fx::detail {
namespace {

// A GPU backend's native stream: made non-blocking, destroyed by us.
#if defined(KOKKOS_ENABLE_CUDA)
using NativeStream = cudaStream_t;
constexpr const char* kBackend = "CUDA";
bool create_stream(NativeStream& s) {
  return cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) == cudaSuccess;
}
void destroy_stream(void* s) { (void)cudaStreamDestroy(static_cast<NativeStream>(s)); }
#elif defined(KOKKOS_ENABLE_HIP)
using NativeStream = hipStream_t;
constexpr const char* kBackend = "HIP";
bool create_stream(NativeStream& s) {
  return hipStreamCreateWithFlags(&s, hipStreamNonBlocking) == hipSuccess;
}
void destroy_stream(void* s) { (void)hipStreamDestroy(static_cast<NativeStream>(s)); }
#endif

// One word's term of a mix64 sum, on the device.
struct WordSum {
  const unsigned char* bytes;
  std::size_t n;
  bool aligned;
  KOKKOS_INLINE_FUNCTION void operator()(std::int64_t i, std::uint64_t& sum) const {
    sum +=
        word_term(load_word(bytes, n, static_cast<std::size_t>(i), aligned), static_cast<std::uint64_t>(i));
  }
};

}  // namespace

std::byte* allocate_pinned_bytes(std::size_t bytes, const char* label) {
  auto* p = static_cast<std::byte*>(Kokkos::kokkos_malloc<PinnedSpace>(label, bytes));
  if (!p)
    FX_THROW(CheckpointError,
             fmt::format("data store: cannot allocate {} bytes of pinned memory ({})", bytes, label));
  return p;
}

void free_pinned_bytes(std::byte* p) {
  if (p) Kokkos::kokkos_free<PinnedSpace>(p);
}

DeviceStaging::~DeviceStaging() {
  if (space_) space_->fence();
  for (auto& b : buffers_) free_pinned(b);
  for (auto& b : sums_host_) free_pinned(b);
  sums_ = {};
  space_.reset();
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
  if (stream_) destroy_stream(stream_);
#endif
}

void DeviceStaging::free_pinned(Pinned& p) {
  free_pinned_bytes(p.data);
  p = {};
}

std::byte* DeviceStaging::buffer(std::size_t index, std::size_t bytes) {
  if (buffers_.size() <= index) buffers_.resize(index + 1);
  Pinned& p = buffers_[index];
  if (p.bytes < bytes) {
    if (space_) space_->fence();  // a copy may still use the old room
    free_pinned(p);
    p.data = allocate_pinned_bytes(bytes, "fx_staging");
    p.bytes = bytes;
  }
  reserve_sums(index + 1);
  return p.data;
}

void DeviceStaging::reserve_sums(std::size_t count) {
  if (sums_.extent(0) >= count) return;
  if (space_) space_->fence();  // a sum may still be in flight
  // Doubled: members are registered one by one, and outgrown arrays are kept.
  count = std::max({count, 2 * sums_.extent(0), std::size_t{16}});
  const std::size_t bytes = count * sizeof(std::uint64_t);
  sums_host_.push_back({allocate_pinned_bytes(bytes, "fx_checksums"), bytes});
  sums_ = Kokkos::View<std::uint64_t*, DeviceSpace::memory_space>("fx_checksums", count);
}

const std::uint64_t* DeviceStaging::hash(std::size_t index, const std::byte* data, std::size_t bytes) {
  reserve_sums(index + 1);
  const DeviceSpace& s = space();
  const auto sum = Kokkos::subview(sums_, index);
  const WordSum f{reinterpret_cast<const unsigned char*>(data), bytes,
                  reinterpret_cast<std::uintptr_t>(data) % alignof(std::uint64_t) == 0};
  const auto words = static_cast<std::int64_t>(word_count(bytes));
  // Into a View: the reduction is enqueued, not waited for.
  Kokkos::parallel_reduce(
      "fx_checksum", Kokkos::RangePolicy<DeviceSpace, Kokkos::IndexType<std::int64_t>>(s, 0, words), f, sum);
  auto* host = reinterpret_cast<std::uint64_t*>(sums_host_.back().data) + index;
  Kokkos::deep_copy(
      s, Kokkos::View<std::uint64_t, PinnedSpace, Kokkos::MemoryTraits<Kokkos::Unmanaged>>(host), sum);
  return host;
}

const DeviceSpace& DeviceStaging::space() {
  if (!space_) {
    // A stream of its own, non-blocking: the app's copies on the legacy
    // default stream (a plain deep_copy) must not wait for a checkpoint's
    // copy, nor it for them; nor for the app's kernels on the default
    // instance (after_app_kernels() waits for those first).
#if defined(KOKKOS_ENABLE_CUDA) || defined(KOKKOS_ENABLE_HIP)
    NativeStream stream = nullptr;
    if (!create_stream(stream))
      FX_THROW(CheckpointError,
               fmt::format("data store: cannot create a {} stream for checkpoint copies", kBackend));
    stream_ = stream;
    space_.emplace(stream);
#elif defined(KOKKOS_ENABLE_SYCL)
    // An in-order queue of its own, on the default instance's device and
    // context (a SYCL queue is the stream's counterpart).
    const sycl::queue& q = DeviceSpace().sycl_queue();
    space_.emplace(sycl::queue(q.get_context(), q.get_device(), sycl::property::queue::in_order()));
#else
    space_.emplace();  // a host backend: the copies are plain copies
#endif
  }
  return *space_;
}

void DeviceStaging::after_app_kernels() { DeviceSpace().fence(); }

void DeviceStaging::fence() {
  if (!space_) return;
  const auto t = std::chrono::steady_clock::now();
  space_->fence();
  waited_ns_ +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace fx::detail
