#pragma once
// A compact image of a minife Problem's assembled rows: what a rank's buddy
// keeps of its matrix (app.static_matrix) so that a recruited spare receives
// its rows instead of assembling them. Rows differ only by where they sit
// against the mesh's and the rank block's faces, so the image holds each
// distinct row once (a pattern: b, then per entry the column's offset from
// the row, or "a ghost", and the value) and per row its pattern's number
// and its ghost columns. Decoding is a copy: the matrix is bitwise the
// assembled one. 64^3 elements on 4 ranks: about 0.6 MB per rank against
// 22 MB of CSR arrays and b.
#include "minife.hpp"

#include <Kokkos_Core.hpp>

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace miniapps::minife {

class PackedRows {
 public:
  // The image of a's assembled rows (replaces the previous one).
  void pack(const Problem& a) {
    const auto ptr = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.row_ptr);
    const auto col = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.col);
    const auto val = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.val);
    const auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), a.b);
    const std::int64_t n = a.n_own;
    std::vector<std::uint32_t> pattern(static_cast<std::size_t>(n));
    std::vector<std::int64_t> start{0};
    std::vector<double> rhs, value;
    std::vector<std::int32_t> offset, ghosts;
    std::unordered_map<std::string, std::uint32_t> ids;
    std::string key;
    for (std::int64_t i = 0; i < n; ++i) {
      key.assign(reinterpret_cast<const char*>(&b(i)), sizeof(double));
      for (std::int64_t k = ptr(i); k < ptr(i + 1); ++k) {
        const std::int32_t d = entry_offset(col(k), i, n);
        key.append(reinterpret_cast<const char*>(&d), sizeof d);
        key.append(reinterpret_cast<const char*>(&val(k)), sizeof(double));
        if (d == kGhost) ghosts.push_back(col(k));
      }
      const auto [it, fresh] = ids.emplace(key, static_cast<std::uint32_t>(rhs.size()));
      pattern[static_cast<std::size_t>(i)] = it->second;
      if (!fresh) continue;
      rhs.push_back(b(i));
      for (std::int64_t k = ptr(i); k < ptr(i + 1); ++k) {
        offset.push_back(entry_offset(col(k), i, n));
        value.push_back(val(k));
      }
      start.push_back(static_cast<std::int64_t>(offset.size()));
    }
    const std::int64_t header[5] = {
        n, static_cast<std::int64_t>(col.extent(0)), static_cast<std::int64_t>(rhs.size()),
        static_cast<std::int64_t>(offset.size()), static_cast<std::int64_t>(ghosts.size())};
    bytes_.clear();
    put(header, 5);
    put(pattern.data(), pattern.size());
    put(start.data(), start.size());
    put(rhs.data(), rhs.size());
    put(offset.data(), offset.size());
    put(value.data(), value.size());
    put(ghosts.data(), ghosts.size());
  }

  // a's row_ptr, col, val and b from the image; a has its shape (n_own).
  void unpack(Problem& a) const {
    std::size_t at = 0;
    std::int64_t header[5];
    get(at, header, 5);
    const std::int64_t n = header[0], nnz = header[1], npat = header[2], nent = header[3], nghost = header[4];
    if (n != a.n_own) {
      throw std::runtime_error("minife: packed rows of " + std::to_string(n) + " rows for a block of " +
                               std::to_string(a.n_own));
    }
    std::vector<std::uint32_t> pattern(static_cast<std::size_t>(n));
    std::vector<std::int64_t> start(static_cast<std::size_t>(npat) + 1);
    std::vector<double> rhs(static_cast<std::size_t>(npat)), value(static_cast<std::size_t>(nent));
    std::vector<std::int32_t> offset(static_cast<std::size_t>(nent)),
        ghosts(static_cast<std::size_t>(nghost));
    get(at, pattern.data(), pattern.size());
    get(at, start.data(), start.size());
    get(at, rhs.data(), rhs.size());
    get(at, offset.data(), offset.size());
    get(at, value.data(), value.size());
    get(at, ghosts.data(), ghosts.size());
    const auto no_init = [](const char* label) {
      return Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string(label));
    };
    a.row_ptr = decltype(a.row_ptr)(no_init("minife_row_ptr"), static_cast<std::size_t>(n) + 1);
    a.col = decltype(a.col)(no_init("minife_col"), static_cast<std::size_t>(nnz));
    a.val = decltype(a.val)(no_init("minife_val"), static_cast<std::size_t>(nnz));
    a.b = decltype(a.b)(no_init("minife_b"), static_cast<std::size_t>(n));
    auto ptr = Kokkos::create_mirror_view(a.row_ptr);
    auto col = Kokkos::create_mirror_view(a.col);
    auto val = Kokkos::create_mirror_view(a.val);
    auto b = Kokkos::create_mirror_view(a.b);
    std::int64_t k = 0;
    std::size_t g = 0;
    ptr(0) = 0;
    for (std::int64_t i = 0; i < n; ++i) {
      const std::uint32_t p = pattern[static_cast<std::size_t>(i)];
      b(i) = rhs[p];
      for (std::int64_t e = start[p]; e < start[p + 1]; ++e, ++k) {
        const std::int32_t d = offset[static_cast<std::size_t>(e)];
        col(k) = d == kGhost ? ghosts[g++] : static_cast<int>(i + d);
        val(k) = value[static_cast<std::size_t>(e)];
      }
      ptr(i + 1) = k;
    }
    if (k != nnz || g != ghosts.size()) throw std::runtime_error("minife: packed rows do not add up");
    Kokkos::deep_copy(a.row_ptr, ptr);
    Kokkos::deep_copy(a.col, col);
    Kokkos::deep_copy(a.val, val);
    Kokkos::deep_copy(a.b, b);
  }

  std::vector<std::byte>& bytes() { return bytes_; }

 private:
  static constexpr std::int32_t kGhost = INT32_MIN;  // an offset no owned column has (|c - i| < n)

  static std::int32_t entry_offset(int c, std::int64_t row, std::int64_t n_own) {
    return c < n_own ? static_cast<std::int32_t>(c - row) : kGhost;
  }
  template <class T>
  void put(const T* p, std::size_t count) {
    const auto* raw = reinterpret_cast<const std::byte*>(p);
    bytes_.insert(bytes_.end(), raw, raw + count * sizeof(T));
  }
  template <class T>
  void get(std::size_t& at, T* p, std::size_t count) const {
    const std::size_t n = count * sizeof(T);
    if (at + n > bytes_.size()) throw std::runtime_error("minife: packed rows truncated");
    if (n > 0) std::memcpy(p, bytes_.data() + at, n);
    at += n;
  }

  std::vector<std::byte> bytes_;
};

}  // namespace miniapps::minife
