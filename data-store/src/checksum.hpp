#pragma once
// Checksums over member bytes: xxHash (XXH3, 64 bit) for host members, and
// mix64 (word_hash.hpp), which a device computes as a reduction, for
// members in device memory. Each member record names its kind.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace fx::detail {

enum class HashKind : std::uint8_t { xxh3 = 0, mix64 = 1 };

// The kind's name: an HDF5 member dataset's checksum attribute.
const char* hash_name(HashKind kind);

std::uint64_t hash_bytes(const void* data, std::size_t n);  // XXH3
std::uint64_t hash_bytes(HashKind kind, const void* data, std::size_t n);
// Copy n bytes and return their hash, in one pass over memory: each chunk
// is hashed while it is still in cache from the copy. Large copies use
// non-temporal stores (the copy is not read again soon).
std::uint64_t copy_and_hash(HashKind kind, std::byte* dst, const std::byte* src, std::size_t n);
// The same, hashing the copy (in cache from ordinary stores): for a source
// the application may write meanwhile (parts it rewrites before reading,
// such as ghost layers), the hash still matches the bytes stored.
std::uint64_t copy_then_hash(std::byte* dst, const std::byte* src, std::size_t n);
// One value for a list of hashes (a rank's whole image).
std::uint64_t combine_hashes(const std::vector<std::uint64_t>& hashes);

}  // namespace fx::detail
