#pragma once
/// \file
/// Reading the last checkpoint as the old decomposition laid it out, after a
/// shrink (recovery.on_exhausted: shrink) left fewer ranks than wrote it, or
/// a relaunch started the job on fewer ranks.
/// See DataStore::restore_resized in <fx/data_store/store.hpp>.
#include <fx/data_store/level.hpp>
#include <fx/data_store/member.hpp>
#include <fx/error.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fx {

/// The version restore_resized() brings back.
struct PriorVersion {
  std::int64_t iteration = -1;                    ///< the runtime resumes here
  int size = 0;                                   ///< logical ranks that wrote it (the old decomposition)
  int new_size = 0;                               ///< logical ranks now
  CheckpointLevel level = CheckpointLevel::none;  ///< memory, node or hdf5
};

/// One member of an old rank's image: what it was registered as, and its bytes.
struct PriorMember {
  std::string name;                    ///< the name it was registered under
  std::string type;                    ///< as in Member::type ("float64", ...)
  std::string layout;                  ///< as in Member::layout ("right" or "left")
  std::vector<std::uint64_t> extents;  ///< as in Member::extents (empty: a scalar)
  const std::byte* data = nullptr;     ///< its bytes, valid while the PriorPiece is
  std::size_t bytes = 0;               ///< size of `data`
};

namespace detail {
struct PriorImage;
}

/// An old logical rank's image of the prior version: read-only, checksums
/// verified, valid only during the callback that receives it.
class PriorPiece {
 public:
  /// Made by the store for each wanted old rank and handed to PriorUse.
  explicit PriorPiece(const detail::PriorImage& image) : image_(image) {}
  int rank() const;                ///< old logical rank
  int old_size() const;            ///< logical ranks of the old decomposition (that wrote the version)
  std::int64_t iteration() const;  ///< the version's iteration
  bool has(const std::string& name) const;  ///< whether the image has member `name`
  /// Member `name` of the image. Throws CheckpointError naming the member,
  /// the old rank and the iteration when the image has no such member.
  PriorMember member(const std::string& name) const;
  /// The member's elements as T (its type must be T's): pointer and count.
  template <class T>
  const T* data(const std::string& name, std::size_t* count = nullptr) const {
    const PriorMember m = typed(name, detail::type_name<T>(), sizeof(T));
    if (count) *count = m.bytes / sizeof(T);
    return reinterpret_cast<const T*>(m.data);
  }
  /// A scalar member (add_scalar), by value.
  template <class T>
  T scalar(const std::string& name) const {
    std::size_t n = 0;
    const T* p = data<T>(name, &n);
    if (n != 1) not_scalar(name, n);
    return *p;
  }

 private:
  PriorMember typed(const std::string& name, const std::string& type, std::size_t element) const;
  [[noreturn]] void not_scalar(const std::string& name, std::size_t count) const;
  const detail::PriorImage& image_;
};

/// Which old ranks this rank needs, given the version found (the old and new
/// sizes are in it); called once, on every rank.
using PriorWants = std::function<std::vector<int>(const PriorVersion&)>;
/// Called once per wanted old rank, in ascending old rank order.
using PriorUse = std::function<void(const PriorPiece&)>;

}  // namespace fx
