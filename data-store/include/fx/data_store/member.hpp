#pragma once
/// \file
/// fx::Member: one registered piece of application state, seen as bytes,
/// and the factories that describe buffers, std::vectors and Kokkos::Views.
#include <fx/error.hpp>

#include <Kokkos_Core.hpp>

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace fx {

/// When a commit takes its snapshot of a member (DataStore::set_snapshot).
/// at_commit: commit() copies the member before it returns. during_next_step:
/// until its next step has ended the application writes none of the
/// member's memory (the usual double buffer whose next step only reads it:
/// a halo exchange fills the ghost faces of the field a step wrote, before
/// the swap, as the stencil mini-app does), so an asynchronous commit
/// copies it beside that step and the step-end hook waits for the copy. A
/// write to it meanwhile, even of bytes rewritten before they are read, is
/// a data race with that copy. Members without host memory are always
/// copied at the commit.
enum class Snapshot { at_commit, during_next_step };

/// The execution space the data store copies device members on: an
/// instance of its own (its own stream on a GPU), so a checkpoint's copy
/// overlaps the application's next kernels.
using DeviceSpace = Kokkos::DefaultExecutionSpace;

/// One registered piece of application state as the store sees it: its
/// description (type, extents, layout, size) and how to copy its bytes out
/// and back in. make_member builds one for a buffer, std::vector or View.
struct Member {
  std::string name;                  ///< unique among the registered members
  std::string type;                  ///< "float64", "int32", "uint8", "bytes16", ...
  std::vector<std::size_t> extents;  ///< element counts per dimension (empty: a scalar)
  std::string layout = "right";      ///< how extents map to memory: right (C order) | left (Fortran)
  /// Size in bytes.
  std::size_t bytes = 0;
  std::function<void(std::byte*)> save;        ///< copy the member out (bytes bytes)
  std::function<void(const std::byte*)> load;  ///< copy it back in
  /// Optional: the member's bytes as one contiguous host range, looked up at
  /// each use (a std::vector may have moved). Lets the store copy and hash in
  /// one pass and receive a restore straight into application memory.
  std::function<std::byte*()> host;
  /// Set for a member the host cannot read in place (a contiguous device
  /// View; `host` is then empty): enqueue the copy of the member into `out`
  /// (bytes long, host memory), or out of `in` into the member, on `space`;
  /// the copy is complete after space.fence(). The store passes pinned
  /// staging memory of its own.
  ///@{
  std::function<void(const DeviceSpace& space, std::byte* out)> to_host;
  std::function<void(const DeviceSpace& space, const std::byte* in)> from_host;
  ///@}
  /// An asynchronous commit's during_next_step device member: a copy in
  /// device memory (the member's own, kept for the next commit) taken at
  /// the commit, from which the copy to the host is made after the commit
  /// returned; the app's next step then need not wait for that copy.
  /// `reserve_snapshot` allocates that copy (DataStore::set_snapshot calls
  /// it, so that no commit does).
  ///@{
  std::function<void(const DeviceSpace& space)> to_snapshot;
  std::function<void(const DeviceSpace& space, std::byte* out)> snapshot_to_host;
  std::function<void()> reserve_snapshot;
  ///@}
  /// Optional, beside to_host: where the member's bytes, and its snapshot's,
  /// lie in memory the DeviceSpace reads (looked up at each use). The store
  /// then checksums them on the device as it copies them (the mix64 kind):
  /// no checksum pass over them runs on the host. Empty: the host does.
  ///@{
  std::function<const std::byte*()> device_bytes;
  std::function<const std::byte*()> snapshot_bytes;
  ///@}
  Snapshot snapshot = Snapshot::at_commit;  ///< when a commit copies it (DataStore::set_snapshot)
  /// Set for a member whose size changes (fx::resizable): its extents now,
  /// read at every commit (which sets `extents` and `bytes` from them),
  /// and how to reallocate it to the extents of the version a restore
  /// gives back, before the restore fills it. `reshape` throws
  /// CheckpointError for extents the member cannot take (a dimension its
  /// type fixes). Both empty: the member's size is fixed at registration.
  ///@{
  std::function<std::vector<std::size_t>()> shape;
  std::function<void(const std::vector<std::size_t>&)> reshape;
  ///@}
};

namespace detail {

template <class T>
struct is_complex : std::false_type {};
template <class T>
struct is_complex<std::complex<T>> : std::true_type {};

template <class T>
std::string type_name() {
  const std::string bits = std::to_string(8 * sizeof(T));
  if constexpr (std::is_same_v<T, bool>)
    return "bool";
  else if constexpr (std::is_floating_point_v<T>)
    return "float" + bits;
  else if constexpr (std::is_integral_v<T>)
    return (std::is_signed_v<T> ? "int" : "uint") + bits;
  else if constexpr (std::is_same_v<T, std::byte>)
    return "uint8";
  else if constexpr (is_complex<T>::value)
    return "complex" + bits;
  else
    return "bytes" + std::to_string(sizeof(T));
}

/// Bytes per element of a type name ("float64" -> 8, "bytes12" -> 12, "bytes" -> 1).
std::size_t type_size(std::string_view type);

/// A member whose bytes are a contiguous host range: save/load are copies.
Member host_member(std::string name, std::string type, std::vector<std::size_t> extents, std::string layout,
                   std::size_t bytes, std::function<std::byte*()> host);

[[noreturn]] void throw_resized(const std::string& name, std::size_t registered, std::size_t now);

/// A resizable member whose bytes are a contiguous host range: `host`,
/// `shape` and `reshape` are looked up at each use; save/load copy the
/// bytes of the current extents.
Member resizable_host_member(std::string name, std::string type, std::string layout, std::size_t element,
                             const std::function<std::byte*()>& host,
                             std::function<std::vector<std::size_t>()> shape,
                             std::function<void(const std::vector<std::size_t>&)> reshape);

/// Throws UsageError: resizable View `name` spans `span` elements for `size`.
[[noreturn]] void throw_padded(const std::string& name, std::size_t span, std::size_t size);

/// Throws CheckpointError: member `name` cannot take `extents` (`why`).
[[noreturn]] void throw_reshape(const std::string& name, const std::vector<std::size_t>& extents,
                                const std::string& why);

/// `view` reallocated (label kept, contents not) to `extents`, one per
/// dimension, unless it has them already; extents that V's type fixes must
/// match.
template <class V>
void reshape_view(V& view, const std::vector<std::size_t>& extents, const std::string& name) {
  constexpr unsigned rank = static_cast<unsigned>(V::rank);
  if (extents.size() != rank)
    throw_reshape(name, extents, "the View has " + std::to_string(rank) + " dimensions");
  bool same = true;
  for (unsigned r = 0; r < rank; ++r) {
    if (r >= static_cast<unsigned>(V::rank_dynamic) && extents[r] != view.extent(r))
      throw_reshape(
          name, extents,
          "its type fixes dimension " + std::to_string(r) + " at " + std::to_string(view.extent(r)));
    same = same && extents[r] == view.extent(r);
  }
  if (same) return;
  std::size_t n[8] = {1, 1, 1, 1, 1, 1, 1, 1};
  for (unsigned r = 0; r < rank; ++r) n[r] = extents[r];
  const typename V::array_layout layout(n[0], n[1], n[2], n[3], n[4], n[5], n[6], n[7]);
  const std::string label = view.label();
  view = V();  // the old allocation goes first: the peak stays one copy
  view = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, label), layout);
}

template <class V>
constexpr bool dense_layout = std::is_same_v<typename V::array_layout, Kokkos::LayoutRight> ||
                              std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft>;

/// An unmanaged host View of V's type and layout over `p`.
template <class V>
auto host_alias(const V& view, const std::byte* p) {
  using T = typename V::non_const_value_type;
  using H = Kokkos::View<typename V::non_const_data_type, typename V::array_layout, Kokkos::HostSpace,
                         Kokkos::MemoryTraits<Kokkos::Unmanaged>>;
  return H(reinterpret_cast<T*>(const_cast<std::byte*>(p)), view.layout());
}

/// A dense View copied through host memory on an execution-space instance
/// (make_member's path for device Views; tests force it on host Views).
/// `current` returns the View to copy at each use. The copies are
/// asynchronous on the instance they are given; save/load (TryBlocks, fault
/// injection) complete at once, on an instance of their own.
template <class V, class Current>
Member staged_member(const std::string& name, const V& view, Current current) {
  static_assert(dense_layout<V>, "staged members are LayoutRight or LayoutLeft");
  using T = typename V::non_const_value_type;
  Member m;
  m.name = name;
  m.type = type_name<T>();
  for (unsigned r = 0; r < static_cast<unsigned>(V::rank); ++r) m.extents.push_back(view.extent(r));
  m.layout = std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft> ? "left" : "right";
  m.bytes = view.size() * sizeof(T);
  m.to_host = [current](const DeviceSpace& space, std::byte* out) {
    const V& v = current();
    Kokkos::deep_copy(space, host_alias(v, out), v);
  };
  m.from_host = [current](const DeviceSpace& space, const std::byte* in) {
    const V& v = current();
    Kokkos::deep_copy(space, v, host_alias(v, in));
  };
  using Copy =
      Kokkos::View<typename V::non_const_data_type, typename V::array_layout, typename V::memory_space>;
  auto copy = std::make_shared<Copy>();  // allocated at the first snapshot
  m.reserve_snapshot = [current, copy] {
    const V& v = current();
    if (copy->span() != v.span())
      *copy = Copy(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("fx_snapshot")), v.layout());
  };
  m.to_snapshot = [current, copy, reserve = m.reserve_snapshot](const DeviceSpace& space) {
    reserve();  // the member's size may have changed since
    Kokkos::deep_copy(space, *copy, current());
  };
  m.snapshot_to_host = [copy](const DeviceSpace& space, std::byte* out) {
    Kokkos::deep_copy(space, host_alias(*copy, out), *copy);
  };
  if constexpr (Kokkos::SpaceAccessibility<DeviceSpace, typename V::memory_space>::accessible) {
    m.device_bytes = [current] { return reinterpret_cast<const std::byte*>(current().data()); };
    m.snapshot_bytes = [copy] { return reinterpret_cast<const std::byte*>(copy->data()); };
  }
  m.save = [to = m.to_host](std::byte* out) {
    const DeviceSpace space;
    space.fence();  // the app's kernels that wrote the View
    to(space, out);
    space.fence();
  };
  m.load = [from = m.from_host](const std::byte* in) {
    const DeviceSpace space;
    from(space, in);
    space.fence();
  };
  return m;
}

}  // namespace detail

/// `n` elements at `data` (the pointer must stay valid while registered).
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param data the first element; the memory stays the caller's
/// \param n the number of elements (a fixed size)
/// \return the member, for DataStore::add_member (DataStore::add calls both)
template <class T>
Member make_member(const std::string& name, T* data, std::size_t n) {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "members must be non-const and trivially copyable");
  return detail::host_member(name, detail::type_name<T>(), {n}, "right", n * sizeof(T),
                             [data] { return reinterpret_cast<std::byte*>(data); });
}

/// A std::vector of fixed size: resizing it after registration is an error
/// (register it again); reallocation without resizing is followed.
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param v the vector, by reference: it must outlive the registration
/// \return the member, for DataStore::add_member; a commit or restore that finds the size
///   changed fails with an error naming it
template <class T>
Member make_member(const std::string& name, std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> is not contiguous");
  std::vector<T>* p = &v;
  const std::size_t n = v.size();
  return detail::host_member(name, detail::type_name<T>(), {n}, "right", n * sizeof(T), [p, n, name] {
    if (p->size() != n) detail::throw_resized(name, n, p->size());
    return reinterpret_cast<std::byte*>(p->data());
  });
}

/// A Kokkos::View of any rank and layout. Contiguous host views are used in
/// place; device or strided views go through a LayoutRight host copy.
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param view the View; the member keeps a copy of the handle, so its allocation lives
///   while registered (a View later assigned to the variable is not followed: fx::follow)
/// \return the member, for DataStore::add_member (DataStore::add calls both)
template <class D, class... P>
Member make_member(const std::string& name, const Kokkos::View<D, P...>& view) {
  using V = Kokkos::View<D, P...>;
  using T = typename V::non_const_value_type;
  static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
  static_assert(!std::is_const_v<typename V::value_type>, "a const View cannot be restored");
  constexpr unsigned rank = static_cast<unsigned>(V::rank);
  std::vector<std::size_t> ext;
  for (unsigned r = 0; r < rank; ++r) ext.push_back(view.extent(r));
  const std::size_t bytes = view.size() * sizeof(T);
  constexpr bool host_ok =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;
  const bool dense = view.span_is_contiguous() && view.span() == view.size();
  if (host_ok && dense) {
    const char* layout = std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft> ? "left" : "right";
    return detail::host_member(name, detail::type_name<T>(), std::move(ext), layout, bytes,
                               [view] { return reinterpret_cast<std::byte*>(view.data()); });
  }
  if constexpr (!host_ok && detail::dense_layout<V>) {
    if (dense) return detail::staged_member(name, view, [view]() -> const V& { return view; });
  }
  using Host = Kokkos::View<typename V::non_const_data_type, Kokkos::LayoutRight, Kokkos::HostSpace>;
  auto staging = [view] {
    Kokkos::LayoutRight lay(view.extent(0), view.extent(1), view.extent(2), view.extent(3), view.extent(4),
                            view.extent(5), view.extent(6), view.extent(7));
    return Host(Kokkos::view_alloc(Kokkos::WithoutInitializing, std::string("fx_staging")), lay);
  };
  Member m;
  m.name = name;
  m.type = detail::type_name<T>();
  m.extents = std::move(ext);
  m.bytes = bytes;
  m.save = [view, staging, bytes](std::byte* out) {
    auto mirror = Kokkos::create_mirror_view(view);
    Kokkos::deep_copy(mirror, view);
    Host tmp = staging();
    Kokkos::deep_copy(tmp, mirror);
    std::memcpy(out, tmp.data(), bytes);
  };
  m.load = [view, staging, bytes](const std::byte* in) {
    Host tmp = staging();
    std::memcpy(tmp.data(), in, bytes);
    auto mirror = Kokkos::create_mirror_view(view);
    Kokkos::deep_copy(mirror, tmp);
    Kokkos::deep_copy(view, mirror);
  };
  return m;
}

/// A View registered by handle, not by memory: fx::follow(u) makes the
/// member look the View up at every commit and restore, so the usual double
/// buffer (std::swap(u, u_new) after each step) checkpoints and restores the
/// buffer that is current then. The View object must outlive its
/// registration (a data member, not a local). Reallocating it to other
/// extents is an error (register it again).
/// \code
///   ctx.store().add("u", fx::follow(u_));
/// \endcode
template <class V>
struct Followed {
  V* view;  ///< the View object registered
};
/// Register `view` by handle (see fx::Followed).
/// \param view the View object (a data member, not a local): it must outlive the registration
/// \return the handle to pass to DataStore::add or make_member
template <class D, class... P>
Followed<Kokkos::View<D, P...>> follow(Kokkos::View<D, P...>& view) {
  return {&view};
}

/// A View registered by handle (fx::follow): the View current at each use.
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param followed fx::follow(view)'s handle; the View's extents are fixed at registration
/// \return the member, for DataStore::add_member (DataStore::add calls both)
template <class V>
Member make_member(const std::string& name, Followed<V> followed) {
  using T = typename V::non_const_value_type;
  static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
  static_assert(!std::is_const_v<typename V::value_type>, "a const View cannot be restored");
  V* p = followed.view;
  constexpr unsigned rank = static_cast<unsigned>(V::rank);
  std::vector<std::size_t> ext;
  for (unsigned r = 0; r < rank; ++r) ext.push_back(p->extent(r));
  const std::size_t n = p->size();
  const std::size_t bytes = n * sizeof(T);
  // The handle may now name other memory, never another shape.
  auto current = [p, ext, n, name]() -> V& {
    bool same = p->size() == n;
    for (unsigned r = 0; same && r < rank; ++r) same = p->extent(r) == ext[r];
    if (!same) detail::throw_resized(name, n, p->size());
    return *p;
  };
  constexpr bool host_ok =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;
  constexpr bool dense = detail::dense_layout<V>;
  if constexpr (host_ok && dense) {
    const char* layout = std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft> ? "left" : "right";
    return detail::host_member(name, detail::type_name<T>(), std::move(ext), layout, bytes,
                               [current] { return reinterpret_cast<std::byte*>(current().data()); });
  } else if constexpr (dense) {
    // Device memory: copied through the store's pinned staging memory.
    return detail::staged_member(name, *p, current);
  } else {
    // Device or strided: through a copy of whatever View is current.
    Member m = make_member(name, *p);
    m.save = [current, name](std::byte* out) { make_member(name, current()).save(out); };
    m.load = [current, name](const std::byte* in) { make_member(name, current()).load(in); };
    return m;
  }
}

namespace detail {
/// A resizable dense View copied through the store's staging (make_member's
/// path for device Views; tests force it on host Views).
template <class V, class Shape, class Reshape>
Member resizable_staged_member(const std::string& name, V* p, Shape shape, Reshape reshape) {
  Member m = staged_member(name, *p, [p]() -> const V& { return *p; });
  m.shape = std::move(shape);
  m.reshape = std::move(reshape);
  return m;
}
}  // namespace detail

/// A member whose size changes while registered (particles that migrate
/// between ranks, an adaptive mesh): fx::resizable(v) registers a
/// std::vector or a Kokkos::View by handle; every commit takes it at the
/// extents it has then (ranks may differ), and a restore reallocates it to
/// the extents of the version it gives back (std::vector::resize; a View
/// keeps its label) before filling it, on survivors and recruited ranks
/// alike. A View's extents that its type fixes (the 3 of View<double*[3]>)
/// cannot change. The object must outlive its registration (a data
/// member, not a local); a resizable member is copied at the commit
/// (Snapshot::at_commit).
/// \code
///   ctx.store().add("x", fx::resizable(x_));  // Kokkos::View<double*[3]> x_;
/// \endcode
template <class T>
struct Resizable {
  T* object;  ///< the std::vector or View registered
};
/// Register a std::vector whose size changes (see fx::Resizable).
/// \param v the vector (a data member, not a local): it must outlive the registration
/// \return the handle to pass to DataStore::add or make_member
template <class T>
Resizable<std::vector<T>> resizable(std::vector<T>& v) {
  return {&v};
}
/// Register a Kokkos::View whose extents change (see fx::Resizable).
/// \param view the View object (a data member, not a local): it must outlive the
///   registration; LayoutRight or LayoutLeft, not padded
/// \return the handle to pass to DataStore::add or make_member
template <class D, class... P>
Resizable<Kokkos::View<D, P...>> resizable(Kokkos::View<D, P...>& view) {
  return {&view};
}

/// A std::vector whose size changes (fx::resizable).
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param r fx::resizable(v)'s handle
/// \return the member, for DataStore::add_member (DataStore::add calls both)
template <class T>
Member make_member(const std::string& name, Resizable<std::vector<T>> r) {
  static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
  static_assert(!std::is_same_v<T, bool>, "std::vector<bool> is not contiguous");
  std::vector<T>* p = r.object;
  return detail::resizable_host_member(
      name, detail::type_name<T>(), "right", sizeof(T),
      [p] { return reinterpret_cast<std::byte*>(p->data()); },
      [p] { return std::vector<std::size_t>{p->size()}; },
      [p, name](const std::vector<std::size_t>& e) {
        if (e.size() != 1) detail::throw_reshape(name, e, "a std::vector has one dimension");
        p->resize(e[0]);
      });
}

/// A Kokkos::View whose extents change (fx::resizable): LayoutRight or
/// LayoutLeft, in host or device memory (device Views go through the
/// store's pinned staging memory, as fixed ones do).
/// \param name unique among the registered members; names it in checkpoints and errors
/// \param r fx::resizable(view)'s handle
/// \return the member, for DataStore::add_member (DataStore::add calls both)
template <class D, class... P>
Member make_member(const std::string& name, Resizable<Kokkos::View<D, P...>> r) {
  using V = Kokkos::View<D, P...>;
  using T = typename V::non_const_value_type;
  static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
  static_assert(!std::is_const_v<typename V::value_type>, "a const View cannot be restored");
  static_assert(detail::dense_layout<V>, "resizable View members are LayoutRight or LayoutLeft");
  V* p = r.object;
  auto shape = [p, name] {
    // A padded allocation (Kokkos::AllowPadding) is no one range of its elements.
    if (p->span() != p->size()) detail::throw_padded(name, p->span(), p->size());
    std::vector<std::size_t> e;
    for (unsigned d = 0; d < static_cast<unsigned>(V::rank); ++d) e.push_back(p->extent(d));
    return e;
  };
  auto reshape = [p, name](const std::vector<std::size_t>& e) { detail::reshape_view(*p, e, name); };
  constexpr bool host_ok =
      Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible;
  if constexpr (host_ok) {
    const char* layout = std::is_same_v<typename V::array_layout, Kokkos::LayoutLeft> ? "left" : "right";
    return detail::resizable_host_member(
        name, detail::type_name<T>(), layout, sizeof(T),
        [p] { return reinterpret_cast<std::byte*>(p->data()); }, shape, reshape);
  } else {
    return detail::resizable_staged_member(name, p, shape, reshape);
  }
}

/// A static member: written once and never changed while registered (an
/// assembled matrix, a mesh). The store sends it to the buddy at the first
/// commit after registration only, and a recovered rank receives it in
/// restore() instead of recomputing it. Its size is known only once filled,
/// so the store reads the current contents at each use and makes room on
/// the receiving side (std::vector::resize, Kokkos::realloc).
struct StaticMember {
  /// Unique among the static members.
  std::string name;
  std::function<std::pair<std::byte*, std::size_t>()> contents;  ///< where, how many bytes now
  std::function<std::byte*(std::size_t)> resize;  ///< room for n bytes (a whole number of elements)
  std::size_t element = 1;                        ///< bytes per element
  std::function<void()> loaded;                   ///< optional: after a restore filled resize()'s room
};

/// A std::vector, by handle: a restore resizes it.
/// \param name unique among the static members
/// \param v the vector, by reference: it must outlive the registration
/// \return the static member, for DataStore::add_static_member (DataStore::add_static calls
///   both)
template <class T>
StaticMember make_static_member(const std::string& name, std::vector<T>& v) {
  static_assert(std::is_trivially_copyable_v<T> && !std::is_same_v<T, bool>,
                "static members must be trivially copyable and contiguous");
  std::vector<T>* p = &v;
  return {name,
          [p] { return std::make_pair(reinterpret_cast<std::byte*>(p->data()), p->size() * sizeof(T)); },
          [p](std::size_t n) {
            p->resize(n / sizeof(T));
            return reinterpret_cast<std::byte*>(p->data());
          },
          sizeof(T),
          {}};
}

/// A one-dimensional View, by handle: a restore reallocates it. A View the
/// host cannot read (device memory) keeps a host copy beside it, made at its
/// first publication (its contents never change while registered) and
/// written back to the device by `loaded` after a restore.
/// \param name unique among the static members
/// \param view the View object, by reference: it must outlive the registration
/// \return the static member, for DataStore::add_static_member (DataStore::add_static calls
///   both)
template <class T, class... P>
StaticMember make_static_member(const std::string& name, Kokkos::View<T*, P...>& view) {
  using V = Kokkos::View<T*, P...>;
  static_assert(std::is_trivially_copyable_v<T> && !std::is_const_v<T>,
                "static members must be trivially copyable");
  static_assert(!std::is_same_v<typename V::array_layout, Kokkos::LayoutStride>,
                "static View members are contiguous");
  V* p = &view;
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename V::memory_space>::accessible) {
    return {name,
            [p] { return std::make_pair(reinterpret_cast<std::byte*>(p->data()), p->size() * sizeof(T)); },
            [p](std::size_t n) {
              *p = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, p->label()), n / sizeof(T));
              return reinterpret_cast<std::byte*>(p->data());
            },
            sizeof(T),
            {}};
  } else {
    using Host = typename V::HostMirror;
    struct Copy {
      Host host;
      const void* of = nullptr;  // the device allocation `host` mirrors
    };
    auto copy = std::make_shared<Copy>();
    return {name,
            [p, copy] {
              if (copy->of != p->data() || copy->host.size() != p->size()) {
                copy->host = Kokkos::create_mirror_view(*p);
                Kokkos::deep_copy(copy->host, *p);
                copy->of = p->data();
              }
              return std::make_pair(reinterpret_cast<std::byte*>(copy->host.data()), p->size() * sizeof(T));
            },
            [p, copy](std::size_t n) {
              *p = V(Kokkos::view_alloc(Kokkos::WithoutInitializing, p->label()), n / sizeof(T));
              copy->host = Kokkos::create_mirror_view(*p);
              copy->of = p->data();
              return reinterpret_cast<std::byte*>(copy->host.data());
            },
            sizeof(T), [p, copy] { Kokkos::deep_copy(*p, copy->host); }};
  }
}

}  // namespace fx
