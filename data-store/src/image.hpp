#pragma once
// A rank's checkpoint image: one contiguous byte range holding a header,
// a member table and the members' bytes. The same bytes are the own copy,
// what goes to the buddy, and what the parity is computed over.
//
//   [header 72 B][member table][zero pad to 4 KiB][member 0][pad to 64 B][member 1]...
#include <fx/data_store/member.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "checksum.hpp"

namespace fx::detail {

class DeviceStaging;

// 2: each member record names its checksum's kind (1, still read: XXH3).
constexpr std::uint32_t kImageFormat = 2;

struct MemberRecord {
  std::string name;
  std::string type;
  std::string layout;
  std::vector<std::uint64_t> extents;
  std::uint64_t offset = 0;  // from the payload start
  std::uint64_t bytes = 0;
  std::uint64_t hash = 0;  // of the bytes, by hash_kind
  // mix64 for a member the device checksums (Member::device_bytes), else XXH3.
  HashKind hash_kind = HashKind::xxh3;
};

struct ImageInfo {
  std::int64_t iteration = -1;
  std::int64_t sequence = 0;  // commit count of the version (drives the HDF5 cadence)
  int rank = -1;
  int size = 0;
  std::vector<MemberRecord> members;
  std::uint64_t payload_offset = 0;
  std::uint64_t total_bytes = 0;

  std::uint64_t digest() const;  // one hash over the member hashes
};

// Where every member goes (hashes still 0).
ImageInfo layout_image(const std::vector<Member>& members, std::int64_t iteration, std::int64_t sequence,
                       int rank, int size);
// The same, for member records read from elsewhere (HDF5): offsets recomputed.
void layout_records(ImageInfo& info);
// Copy every member into `image` (info.total_bytes long), hashing on the
// way, and write the header: info.members[i].hash is filled in. Device
// members go through `staging` (none: their synchronous save()).
// `image_pinned`: the image lies in pinned memory (Memory::pinned), so
// device members are copied straight into it, not through staging buffers.
void pack_image(const std::vector<Member>& members, ImageInfo& info, std::byte* image,
                DeviceStaging* staging = nullptr, bool image_pinned = false);
// A member's copy into an image left for later (an asynchronous commit's
// during_next_step members): `src` is the memory it named at the commit,
// or (`staged`) the pinned buffer its device copy lands in (`dst` itself in
// a pinned image), complete after the staging's fence, as is the sum of
// its device checksum (`device_sum`, DeviceStaging::hash) when it has one.
struct PendingCopy {
  std::byte* dst = nullptr;
  const std::byte* src = nullptr;
  std::size_t bytes = 0;
  std::uint64_t* hash = nullptr;  // its MemberRecord's
  bool staged = false;
  HashKind kind = HashKind::xxh3;
  const std::uint64_t* device_sum = nullptr;
};
// A staged copy's bytes into the image (unless they landed there) and its
// checksum: the device's, else hashed here.
std::uint64_t land(const PendingCopy& c);
// pack_image, except that with `defer` the members marked during_next_step
// are returned instead of copied (device ones with their copy to the host
// under way); the header is written when none is (else by
// finish_pending_copies, after them).
std::vector<PendingCopy> pack_image_now(const std::vector<Member>& members, ImageInfo& info, std::byte* image,
                                        bool defer, DeviceStaging* staging = nullptr,
                                        bool image_pinned = false);
// `concurrent`: beside the app's step (which may rewrite ghost layers):
// the copy of a host member is hashed, not the source.
void finish_pending_copies(const std::vector<PendingCopy>& copies, ImageInfo& info, std::byte* image,
                           bool concurrent, DeviceStaging* staging = nullptr);
// Header + table into image[0, payload_offset).
void write_header(const ImageInfo& info, std::byte* image);
// Decode a header from the first `available` bytes of an image that lies in
// a buffer of `image_bytes` (what the members may span: any bytes give a
// header whose members lie inside it, or a CheckpointError naming `what`,
// e.g. "buddy copy of rank 3, iteration 40", and the field).
ImageInfo read_header(const std::byte* image, std::size_t available, std::size_t image_bytes,
                      const std::string& what);
// The image must hold exactly the registered members (names, types, bytes):
// a resizable member (fx::resizable) first takes the image's extents.
void fit_members(const ImageInfo& info, std::vector<Member>& members, const std::string& what);
// Throws CheckpointError: `what`'s member `member` has the wrong checksum.
[[noreturn]] void throw_checksum_mismatch(const std::string& what, const std::string& member);
// Hash every member's bytes in the image against the table.
void verify_payload(const ImageInfo& info, const std::byte* image, const std::string& what);
// Verify and copy every member back into the application (one pass for
// host members; device members through `staging`'s pinned buffers, or from
// a pinned image straight, to the device, checked there by the device when
// their checksum is mix64 (the bytes are then in the member when a mismatch
// is found), else on the host first). Throws CheckpointError on a checksum
// mismatch.
void unpack_image(const ImageInfo& info, const std::byte* image, std::vector<Member>& members,
                  const std::string& what, DeviceStaging* staging = nullptr, bool image_pinned = false);

}  // namespace fx::detail
