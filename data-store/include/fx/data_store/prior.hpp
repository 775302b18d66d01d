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
struct StoreAccess;
}  // namespace detail

/// An old logical rank's image of the prior version: read-only, checksums
/// verified, valid only during the callback that receives it.
class PriorPiece {
 public:
  /// Old logical rank.
  /// \return the rank in the old decomposition, 0..old_size()-1
  int rank() const;
  /// Logical ranks of the old decomposition (that wrote the version).
  /// \return PriorVersion::size
  int old_size() const;
  /// The version's iteration.
  /// \return PriorVersion::iteration, the same for every piece
  std::int64_t iteration() const;
  /// Whether the image has member `name`.
  /// \param name a name the member was registered under (add, add_scalar)
  /// \return true when the old rank's image holds it
  bool has(const std::string& name) const;
  /// Member `name` of the image.
  /// \param name a name the member was registered under
  /// \return its description and bytes (valid while this piece is)
  /// \throws CheckpointError naming the member, the old rank and the iteration when the image
  ///   has no such member
  PriorMember member(const std::string& name) const;
  /// The member's elements as T (its type must be T's): pointer and count.
  /// \tparam T the element type it was registered with (double for "float64", ...)
  /// \param name a name the member was registered under
  /// \param[out] count set to its number of elements when not null
  /// \return its first element, read-only, valid while this piece is
  /// \throws CheckpointError when the image has no such member, or its type is not T's
  template <class T>
  const T* data(const std::string& name, std::size_t* count = nullptr) const {
    const PriorMember m = typed(name, detail::type_name<T>(), sizeof(T));
    if (count) *count = m.bytes / sizeof(T);
    return reinterpret_cast<const T*>(m.data);
  }
  /// A scalar member (add_scalar), by value.
  /// \tparam T the type it was registered with
  /// \param name the name it was registered under
  /// \return its value in the old rank's image
  /// \throws CheckpointError when the image has no such member, its type is not T's, or it has
  ///   other than one element
  template <class T>
  T scalar(const std::string& name) const {
    std::size_t n = 0;
    const T* p = data<T>(name, &n);
    if (n != 1) not_scalar(name, n);
    return *p;
  }

 private:
  // Made by the store for each wanted old rank (detail::StoreAccess::piece),
  // referencing its checked image.
  friend struct detail::StoreAccess;
  explicit PriorPiece(const detail::PriorImage& image) : image_(image) {}
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
