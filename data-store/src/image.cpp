#include "image.hpp"

#include <fx/data_store/member_shape.hpp>
#include <fx/error.hpp>

#include <fmt/format.h>

#include <cstring>
#include <unordered_map>

#include "checksum.hpp"
#include "device_staging.hpp"
#include "word_hash.hpp"

namespace fx::detail {
namespace {

constexpr std::uint64_t kMagic = 0x3147414d49584631ull;  // "1FXIMAG1"
constexpr std::uint64_t kPayloadAlign = 4096;
constexpr std::uint64_t kMemberAlign = 64;

std::uint64_t round_up(std::uint64_t n, std::uint64_t a) { return (n + a - 1) / a * a; }

class Writer {
 public:
  template <class T>
  void put(T v) {
    const auto* p = reinterpret_cast<const std::byte*>(&v);
    out_.insert(out_.end(), p, p + sizeof(T));
  }
  void put(const std::string& s) {
    put(static_cast<std::uint32_t>(s.size()));
    const auto* p = reinterpret_cast<const std::byte*>(s.data());
    out_.insert(out_.end(), p, p + s.size());
  }
  std::vector<std::byte>& bytes() { return out_; }

 private:
  std::vector<std::byte> out_;
};

class Reader {
 public:
  Reader(const std::byte* p, std::size_t n, const std::string& what) : p_(p), n_(n), what_(what) {}
  template <class T>
  T get() {
    need(sizeof(T));
    T v;
    std::memcpy(&v, p_ + at_, sizeof(T));
    at_ += sizeof(T);
    return v;
  }
  std::string get_string() {
    const auto len = get<std::uint32_t>();
    need(len);
    std::string s(reinterpret_cast<const char*>(p_ + at_), len);
    at_ += len;
    return s;
  }

 private:
  void need(std::size_t k) {
    if (at_ + k > n_) {
      FX_THROW(CheckpointError,
               fmt::format("{}: image header truncated ({} bytes, needs more than {})", what_, n_, at_));
    }
  }
  const std::byte* p_;
  std::size_t n_;
  std::size_t at_ = 0;
  const std::string& what_;
};

std::vector<std::byte> encode_table(const ImageInfo& info) {
  Writer w;
  for (const auto& m : info.members) {
    w.put(m.name);
    w.put(m.type);
    w.put(m.layout);
    w.put(static_cast<std::uint32_t>(m.extents.size()));
    for (auto e : m.extents) w.put(e);
    w.put(m.offset);
    w.put(m.bytes);
    w.put(m.hash);
    w.put(static_cast<std::uint8_t>(m.hash_kind));
  }
  return std::move(w.bytes());
}

constexpr std::size_t kHeaderBytes = 8 + 4 + 4 + 8 + 8 + 4 + 4 + 8 + 8 + 8 + 8;

void read_table(Reader tr, std::uint32_t count, std::uint32_t format, ImageInfo& info,
                const std::string& what);

HashKind read_kind(std::uint8_t k, const std::string& member, const std::string& what) {
  if (k > static_cast<std::uint8_t>(HashKind::mix64)) {
    FX_THROW(CheckpointError,
             fmt::format("{}: member '{}' has checksum kind {} (this build reads 0: xxh3, 1: mix64)", what,
                         member, k));
  }
  return static_cast<HashKind>(k);
}

}  // namespace

std::uint64_t ImageInfo::digest() const {
  std::vector<std::uint64_t> h;
  h.reserve(members.size());
  for (const auto& m : members) h.push_back(m.hash);
  return combine_hashes(h);
}

void layout_records(ImageInfo& info) {
  // The table size depends only on names and extents, not on the values.
  const std::uint64_t table = encode_table(info).size();
  info.payload_offset = round_up(kHeaderBytes + table, kPayloadAlign);
  std::uint64_t off = 0;
  for (auto& m : info.members) {
    m.offset = off;
    off = round_up(off + m.bytes, kMemberAlign);
  }
  info.total_bytes = info.payload_offset + off;
}

ImageInfo layout_image(const std::vector<Member>& members, std::int64_t iteration, std::int64_t sequence,
                       int rank, int size) {
  ImageInfo info;
  info.iteration = iteration;
  info.sequence = sequence;
  info.rank = rank;
  info.size = size;
  for (const auto& m : members) {
    MemberRecord r;
    r.name = m.name;
    r.type = m.type;
    r.layout = m.layout;
    r.extents.assign(m.extents.begin(), m.extents.end());
    r.bytes = m.bytes;
    if (m.to_host && m.device_bytes && !m.host) r.hash_kind = HashKind::mix64;
    info.members.push_back(std::move(r));
  }
  layout_records(info);
  return info;
}

void write_header(const ImageInfo& info, std::byte* image) {
  const auto table = encode_table(info);
  Writer w;
  w.put(kMagic);
  w.put(kImageFormat);
  w.put(static_cast<std::uint32_t>(info.members.size()));
  w.put(info.iteration);
  w.put(info.sequence);
  w.put(static_cast<std::int32_t>(info.rank));
  w.put(static_cast<std::int32_t>(info.size));
  w.put(info.payload_offset);
  w.put(info.total_bytes);
  w.put(static_cast<std::uint64_t>(table.size()));
  w.put(hash_bytes(table.data(), table.size()));
  auto& head = w.bytes();
  std::memcpy(image, head.data(), head.size());
  std::memcpy(image + head.size(), table.data(), table.size());
  std::memset(image + head.size() + table.size(), 0, info.payload_offset - head.size() - table.size());
}

namespace {

// One pack_image_now: the copies it leaves for later (deferred members) and
// those staged through the device that it completes itself.
struct Packing {
  const std::vector<Member>& members;
  ImageInfo& info;
  std::byte* payload;
  bool defer;
  DeviceStaging* staging;
  bool direct;  // the image is pinned: device copies land in it, unstaged
  std::vector<PendingCopy> later, staged_now;

  // Copied to the host on the store's instance (into the image or a staging buffer).
  bool staged(const Member& m) const { return staging && m.to_host && m.bytes > 0; }
  // An asynchronous commit's during_next_step member with a device snapshot.
  bool deferred(const Member& m) const {
    return defer && m.snapshot == Snapshot::during_next_step && m.to_snapshot;
  }
  bool any_staged() const {
    bool device = false;
    for (const auto& m : members) device = device || staged(m);
    return device;
  }

  // Starts each device member's copy to the host (or, deferred, to its
  // snapshot in device memory).
  void stage_device_members() {
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Member& m = members[i];
      if (!m.to_host || m.bytes == 0) continue;
      MemberRecord& r = info.members[i];
      std::byte* host = landing(i);
      PendingCopy c{payload + r.offset, host, m.bytes, &r.hash, true, r.hash_kind};
      if (deferred(m)) {
        m.to_snapshot(staging->space());
        later.push_back(c);
      } else {
        m.to_host(staging->space(), host);
        c.device_sum = device_checksum(i, m.device_bytes);
        staged_now.push_back(c);
      }
    }
  }

  // Member i's checksum on the device, of the bytes `where` names.
  const std::uint64_t* device_checksum(std::size_t i, const std::function<const std::byte*()>& where) {
    if (info.members[i].hash_kind != HashKind::mix64 || !where) return nullptr;
    return staging->hash(i, where(), members[i].bytes);
  }

  // Once the snapshots are taken, starts their copies to the host and
  // their checksums (`later` holds just these copies, in member order).
  void snapshots_to_host() {
    staging->fence();  // the snapshots are taken: the app may write its members
    auto c = later.begin();
    for (std::size_t i = 0; i < members.size(); ++i) {
      const Member& m = members[i];
      if (!m.to_host || m.bytes == 0 || !deferred(m)) continue;
      m.snapshot_to_host(staging->space(), landing(i));
      (c++)->device_sum = device_checksum(i, m.snapshot_bytes);
    }
  }

  // Where member i's device copy lands: its place in a pinned image, else
  // its pinned staging buffer (copied into the image once landed).
  std::byte* landing(std::size_t i) {
    return direct ? payload + info.members[i].offset : staging->buffer(i, members[i].bytes);
  }

  // Member i, unless staged: copied and hashed now, or left for later.
  void copy_host_member(std::size_t i) {
    const Member& m = members[i];
    MemberRecord& r = info.members[i];
    std::byte* dst = payload + r.offset;
    if (staged(m)) {
      // staged above
    } else if (m.host && defer && m.snapshot == Snapshot::during_next_step) {
      later.push_back({dst, m.host(), m.bytes, &r.hash});  // the memory the member names now
    } else if (m.host) {
      r.hash = copy_and_hash(r.hash_kind, dst, m.host(), m.bytes);
    } else {
      m.save(dst);
      r.hash = hash_bytes(r.hash_kind, dst, m.bytes);
    }
  }

  // Zeroes the bytes between member i's data and the next member's.
  void pad_after(std::size_t i) {
    const MemberRecord& r = info.members[i];
    const std::uint64_t end =
        i + 1 < members.size() ? info.members[i + 1].offset : info.total_bytes - info.payload_offset;
    std::memset(payload + r.offset + r.bytes, 0, end - r.offset - r.bytes);  // deterministic padding
  }

  // The staged copies that are not deferred land in the image, hashed.
  void finish_staged() {
    if (staged_now.empty()) return;
    if (later.empty()) staging->fence();  // else fenced above
    for (const auto& c : staged_now) *c.hash = land(c);
  }
};

}  // namespace

std::uint64_t land(const PendingCopy& c) {
  if (c.device_sum) {
    if (c.src != c.dst) std::memcpy(c.dst, c.src, c.bytes);
    return finish_word_sum(*c.device_sum, c.bytes);
  }
  return c.src == c.dst ? hash_bytes(c.kind, c.dst, c.bytes) : copy_and_hash(c.kind, c.dst, c.src, c.bytes);
}

std::vector<PendingCopy> pack_image_now(const std::vector<Member>& members, ImageInfo& info, std::byte* image,
                                        bool defer, DeviceStaging* staging, bool image_pinned) {
  Packing p{members, info, image + info.payload_offset, defer, staging, image_pinned, {}, {}};
  // Device members first: their copies to the host run while the host
  // members are copied here.
  // Deferred ones (an asynchronous commit's during_next_step members) are
  // first copied in device memory, which the commit waits for, and go to
  // the host after it returned.
  if (p.any_staged()) {
    DeviceStaging::after_app_kernels();
    p.stage_device_members();
  }
  if (!p.later.empty()) p.snapshots_to_host();
  for (std::size_t i = 0; i < members.size(); ++i) {
    p.copy_host_member(i);
    p.pad_after(i);
  }
  p.finish_staged();
  if (p.later.empty()) write_header(info, image);
  return std::move(p.later);
}

void finish_pending_copies(const std::vector<PendingCopy>& copies, ImageInfo& info, std::byte* image,
                           bool concurrent, DeviceStaging* staging) {
  bool fenced = false;
  for (const auto& c : copies) {
    if (c.staged && !fenced) {
      staging->fence();  // the device copies have landed
      fenced = true;
    }
    // A staged copy's source is the store's own: nothing rewrites it.
    *c.hash = concurrent && !c.staged ? copy_then_hash(c.dst, c.src, c.bytes) : land(c);
  }
  write_header(info, image);
}

void pack_image(const std::vector<Member>& members, ImageInfo& info, std::byte* image, DeviceStaging* staging,
                bool image_pinned) {
  pack_image_now(members, info, image, false, staging, image_pinned);
}

ImageInfo read_header(const std::byte* image, std::size_t available, std::size_t image_bytes,
                      const std::string& what) {
  Reader rd(image, available, what);
  if (rd.get<std::uint64_t>() != kMagic)
    FX_THROW(CheckpointError, fmt::format("{}: not an fx checkpoint image", what));
  const auto format = rd.get<std::uint32_t>();
  if (format != kImageFormat && format != 1) {
    FX_THROW(CheckpointError,
             fmt::format("{}: image format {} (this build reads 1 and {})", what, format, kImageFormat));
  }
  ImageInfo info;
  const auto count = rd.get<std::uint32_t>();
  info.iteration = rd.get<std::int64_t>();
  info.sequence = rd.get<std::int64_t>();
  info.rank = rd.get<std::int32_t>();
  info.size = rd.get<std::int32_t>();
  info.payload_offset = rd.get<std::uint64_t>();
  info.total_bytes = rd.get<std::uint64_t>();
  const auto table_bytes = rd.get<std::uint64_t>();
  const auto table_hash = rd.get<std::uint64_t>();
  // Each bound is checked without a sum that could wrap around.
  if (available < kHeaderBytes || table_bytes > available - kHeaderBytes ||
      info.payload_offset < kHeaderBytes || table_bytes > info.payload_offset - kHeaderBytes) {
    FX_THROW(CheckpointError, fmt::format("{}: member table of {} bytes does not fit", what, table_bytes));
  }
  if (hash_bytes(image + kHeaderBytes, table_bytes) != table_hash) {
    FX_THROW(CheckpointError, fmt::format("{}: member table checksum mismatch", what));
  }
  if (info.payload_offset > info.total_bytes || info.total_bytes > image_bytes) {
    FX_THROW(CheckpointError,
             fmt::format("{}: image of {} bytes (payload at {}) does not fit in the {} bytes "
                         "it was read from",
                         what, info.total_bytes, info.payload_offset, image_bytes));
  }
  read_table(Reader(image + kHeaderBytes, table_bytes, what), count, format, info, what);
  return info;
}

namespace {

// The member table's `count` records into info.members.
void read_table(Reader tr, std::uint32_t count, std::uint32_t format, ImageInfo& info,
                const std::string& what) {
  for (std::uint32_t i = 0; i < count; ++i) {
    MemberRecord r;
    r.name = tr.get_string();
    r.type = tr.get_string();
    r.layout = tr.get_string();
    const auto rank = tr.get<std::uint32_t>();
    for (std::uint32_t d = 0; d < rank; ++d) r.extents.push_back(tr.get<std::uint64_t>());
    r.offset = tr.get<std::uint64_t>();
    r.bytes = tr.get<std::uint64_t>();
    r.hash = tr.get<std::uint64_t>();
    if (format > 1) r.hash_kind = read_kind(tr.get<std::uint8_t>(), r.name, what);
    const std::uint64_t payload = info.total_bytes - info.payload_offset;
    if (r.offset > payload || r.bytes > payload - r.offset) {
      FX_THROW(CheckpointError, fmt::format("{}: member '{}' lies outside the image", what, r.name));
    }
    info.members.push_back(std::move(r));
  }
}

}  // namespace

void fit_members(const ImageInfo& info, std::vector<Member>& members, const std::string& what) {
  if (info.members.size() != members.size()) {
    FX_THROW(CheckpointError, fmt::format("{}: holds {} members, {} are registered", what,
                                          info.members.size(), members.size()));
  }
  for (std::size_t i = 0; i < members.size(); ++i) {
    const auto& r = info.members[i];
    Member& m = members[i];
    if (r.name == m.name && r.type == m.type) fit(m, r.extents, what);
    if (r.name != m.name || r.type != m.type || r.bytes != m.bytes) {
      FX_THROW(CheckpointError,
               fmt::format("{}: member {} is '{}' ({}, {} bytes) but '{}' ({}, {} bytes) is registered", what,
                           i, r.name, r.type, r.bytes, m.name, m.type, m.bytes));
    }
  }
}

void throw_checksum_mismatch(const std::string& what, const std::string& member) {
  FX_THROW(CheckpointError, fmt::format("{}: checksum mismatch in member '{}'", what, member));
}

void verify_payload(const ImageInfo& info, const std::byte* image, const std::string& what) {
  for (const auto& r : info.members) {
    if (hash_bytes(r.hash_kind, image + info.payload_offset + r.offset, r.bytes) != r.hash)
      throw_checksum_mismatch(what, r.name);
  }
}

namespace {

// One unpack_image: device members whose checksum the device takes once
// they are there (mix64 with Member::device_bytes) and the sums it gives.
struct Unpacking {
  const ImageInfo& info;
  std::vector<Member>& members;
  const std::string& what;
  DeviceStaging* staging;
  bool image_pinned;
  bool staged = false;
  std::vector<std::pair<std::size_t, const std::uint64_t*>> device_checks;

  // Member i's bytes at `src` into host memory (its own, or `pinned` on
  // their way to the device), checked; or only checked (`src` is loaded).
  void copy_checked(std::size_t i, const std::byte* src, std::byte* pinned) {
    const MemberRecord& r = info.members[i];
    const Member& m = members[i];
    const std::uint64_t h = m.host   ? copy_and_hash(r.hash_kind, m.host(), src, r.bytes)
                            : pinned ? copy_and_hash(r.hash_kind, pinned, src, r.bytes)
                                     : hash_bytes(r.hash_kind, src, r.bytes);
    if (h != r.hash) {
      if (staged) staging->fence();
      throw_checksum_mismatch(what, r.name);
    }
  }

  void member(std::size_t i, const std::byte* src) {
    const MemberRecord& r = info.members[i];
    const Member& m = members[i];
    const bool to_device = staging && m.from_host && r.bytes > 0;
    const bool checked_there = to_device && r.hash_kind == HashKind::mix64 && m.device_bytes;
    std::byte* pinned = to_device && !image_pinned ? staging->buffer(i, r.bytes) : nullptr;
    if (!checked_there)
      copy_checked(i, src, pinned);
    else if (pinned)
      std::memcpy(pinned, src, r.bytes);
    if (to_device) {
      m.from_host(staging->space(), pinned ? pinned : src);
      staged = true;
      if (checked_there) device_checks.emplace_back(i, staging->hash(i, m.device_bytes(), r.bytes));
    } else if (!m.host) {
      m.load(src);
    }
  }

  void finish() {
    if (!staged) return;
    staging->fence();  // the app's next kernels read the members
    for (const auto& [i, sum] : device_checks) {
      const MemberRecord& r = info.members[i];
      if (finish_word_sum(*sum, r.bytes) != r.hash) throw_checksum_mismatch(what, r.name);
    }
  }
};

}  // namespace

// Host members: verified while copying; device members: checksummed on the
// device once there (mix64) or verified while copied into pinned memory (in
// a pinned image: where they are), then sent on (the next one's host copy
// overlaps that); others: verified first.
void unpack_image(const ImageInfo& info, const std::byte* image, std::vector<Member>& members,
                  const std::string& what, DeviceStaging* staging, bool image_pinned) {
  fit_members(info, members, what);
  Unpacking u{info, members, what, staging, image_pinned, false, {}};
  for (std::size_t i = 0; i < members.size(); ++i)
    u.member(i, image + info.payload_offset + info.members[i].offset);
  u.finish();
}

}  // namespace fx::detail
