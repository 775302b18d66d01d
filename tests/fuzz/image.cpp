// The checkpoint image reader (header, member table, payload checksums):
// any bytes give an image whose members verify, or a CheckpointError
// naming the image and the field.
#include <fx/error.hpp>

#include "fuzz_support.hpp"
#include "image.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const auto* image = reinterpret_cast<const std::byte*>(data);
  try {
    // As a buddy's or a node's image arrives: its header inside the first
    // bytes, the members anywhere in the buffer.
    const auto info = fx::detail::read_header(image, size, size, "fuzzed image");
    fx::detail::verify_payload(info, image, "fuzzed image");
    (void)info.digest();
  } catch (const fx::CheckpointError& e) {
    fx::fuzz::expect_named(e, "fuzzed image");
  }
  return 0;
}
