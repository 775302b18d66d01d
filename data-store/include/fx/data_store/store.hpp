#pragma once
// fx::DataStore: versioned, consistent checkpoints of registered members.
// Levels: in-memory own + buddy copy, and HDF5 (one file per rank).
#include <fx/comm.hpp>
#include <fx/data_store/options.hpp>

#include <Kokkos_Core.hpp>

#include <cstddef>
#include <cstring>
#include <type_traits>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace fx {

// One registered piece of state, seen as bytes.
struct Member {
  std::string name;
  std::string type;                     // "float64", "int32", "bytes", ...
  std::vector<std::size_t> extents;     // element counts per dimension
  std::size_t bytes = 0;
  std::function<void(std::byte*)> save;         // copy the member out
  std::function<void(const std::byte*)> load;   // copy it back in
};

namespace detail {
template <class T>
std::string type_name();
}

class DataStore {
 public:
  explicit DataStore(CheckpointConfig options = {});
  ~DataStore();
  DataStore(const DataStore&) = delete;
  DataStore& operator=(const DataStore&) = delete;

  // The logical app communicator; set again by the runtime after each repair.
  void set_comm(Comm comm);
  const CheckpointConfig& options() const { return options_; }

  template <class T>
  void add(const std::string& name, T* data, std::size_t n) {
    static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
    add_member(Member{name, detail::type_name<T>(), {n}, n * sizeof(T),
                      [data, n](std::byte* out) { std::memcpy(out, data, n * sizeof(T)); },
                      [data, n](const std::byte* in) { std::memcpy(data, in, n * sizeof(T)); }});
  }
  template <class T>
  void add(const std::string& name, std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>, "members must be trivially copyable");
    std::vector<T>* p = &v;
    add_member(Member{name, detail::type_name<T>(), {v.size()}, v.size() * sizeof(T),
                      [p](std::byte* out) { std::memcpy(out, p->data(), p->size() * sizeof(T)); },
                      [p](const std::byte* in) { std::memcpy(p->data(), in, p->size() * sizeof(T)); }});
  }
  template <class T>
  void add_scalar(const std::string& name, T& value) {
    add(name, &value, 1);
  }
  // Any rank and layout; device memory goes through a host mirror.
  template <class D, class... P>
  void add(const std::string& name, const Kokkos::View<D, P...>& view) {
    using V = Kokkos::View<D, P...>;
    using T = typename V::non_const_value_type;
    std::vector<std::size_t> ext;
    for (unsigned r = 0; r < V::rank; ++r) ext.push_back(view.extent(r));
    const std::size_t bytes = view.span() * sizeof(T);
    add_member(Member{name, detail::type_name<T>(), ext, bytes,
                      [view, bytes](std::byte* out) {
                        auto h = Kokkos::create_mirror_view(view);
                        Kokkos::deep_copy(h, view);
                        std::memcpy(out, h.data(), bytes);
                      },
                      [view, bytes](const std::byte* in) {
                        auto h = Kokkos::create_mirror_view(view);
                        std::memcpy(h.data(), in, bytes);
                        Kokkos::deep_copy(view, h);
                      }});
  }
  void add_member(Member m);
  void clear();
  bool empty() const { return members_.empty(); }
  const std::vector<Member>& members() const { return members_; }

  // Collective on the app comm: store a version of every member for
  // `iteration`; it becomes the committed version only once every rank has
  // it and its buddy copy. A failure inside throws ProcessFailure and leaves
  // the previous committed version intact.
  void commit(std::int64_t iteration);
  // Collective after a repair (or at start): restore the newest version all
  // ranks can get (own memory, buddy, then HDF5). Returns its iteration, or
  // nullopt when there is none (fresh start).
  std::optional<std::int64_t> restore();
  std::optional<std::int64_t> committed_iteration() const;

 private:
  struct Impl;
  CheckpointConfig options_;
  Comm comm_;
  std::vector<Member> members_;
  std::unique_ptr<Impl> impl_;
};

namespace detail {
template <class T>
std::string type_name() {
  if constexpr (std::is_same_v<T, double>) return "float64";
  else if constexpr (std::is_same_v<T, float>) return "float32";
  else if constexpr (std::is_same_v<T, std::int64_t>) return "int64";
  else if constexpr (std::is_same_v<T, std::int32_t>) return "int32";
  else if constexpr (std::is_same_v<T, std::uint64_t>) return "uint64";
  else if constexpr (std::is_same_v<T, std::uint32_t>) return "uint32";
  else if constexpr (std::is_same_v<T, char> || std::is_same_v<T, unsigned char>) return "int8";
  else return "bytes" + std::to_string(sizeof(T));
}
}  // namespace detail

}  // namespace fx
