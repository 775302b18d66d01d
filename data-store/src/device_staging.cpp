#include "device_staging.hpp"

#include <fx/error.hpp>

#include <fmt/format.h>

#include <chrono>

namespace fx::detail {

DeviceStaging::~DeviceStaging() {
  if (space_) space_->fence();
  for (auto& b : buffers_) free_pinned(b);
  space_.reset();
#if defined(KOKKOS_ENABLE_CUDA)
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
#endif
}

void DeviceStaging::free_pinned(Pinned& p) {
  if (p.data) Kokkos::kokkos_free<PinnedSpace>(p.data);
  p = {};
}

std::byte* DeviceStaging::buffer(std::size_t index, std::size_t bytes) {
  if (buffers_.size() <= index) buffers_.resize(index + 1);
  Pinned& p = buffers_[index];
  if (p.bytes < bytes) {
    if (space_) space_->fence();  // a copy may still use the old room
    free_pinned(p);
    p.data = static_cast<std::byte*>(Kokkos::kokkos_malloc<PinnedSpace>("fx_staging", bytes));
    if (!p.data)
      FX_THROW(CheckpointError,
               fmt::format("data store: cannot allocate {} bytes of pinned staging memory", bytes));
    p.bytes = bytes;
  }
  return p.data;
}

const DeviceSpace& DeviceStaging::space() {
  if (!space_) {
#if defined(KOKKOS_ENABLE_CUDA)
    // Non-blocking: the app's copies on the legacy default stream (a plain
    // deep_copy) must not wait for a checkpoint's copy, nor it for them.
    cudaStream_t stream = nullptr;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess)
      FX_THROW(CheckpointError, "data store: cannot create a CUDA stream for checkpoint copies");
    stream_ = stream;
    space_.emplace(stream);
#else
    space_.emplace();
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
