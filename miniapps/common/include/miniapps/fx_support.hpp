#pragma once
// Glue between the shared mini-app pieces and fx (fx apps only).
#include <miniapps/params.hpp>
#include <miniapps/results.hpp>

#include <fx/context.hpp>
#include <fx/data_store/store.hpp>

#include <Kokkos_Core.hpp>

#include <cstring>
#include <string>
#include <type_traits>

namespace miniapps {

// A store member that reads and writes whatever View `*slot` holds when
// the checkpoint is taken or restored. For double-buffered state: the
// solver swaps View handles every iteration, so registering one View
// (which the store would capture by value) would checkpoint the wrong buffer.
template <class View>
fx::Member slot_member(const std::string& name, View* slot) {
  using T = typename View::non_const_value_type;
  static_assert(std::is_same_v<typename View::array_layout, Kokkos::LayoutRight>, "slot members are LayoutRight");
  fx::Member m;
  m.name = name;
  m.type = fx::detail::type_name<T>();
  for (unsigned r = 0; r < View::rank; ++r) m.extents.push_back(slot->extent(r));
  m.bytes = slot->span() * sizeof(T);
  const std::size_t bytes = m.bytes;
  m.save = [slot, bytes](std::byte* out) {
    auto h = Kokkos::create_mirror_view(*slot);
    Kokkos::deep_copy(h, *slot);
    std::memcpy(out, h.data(), bytes);
  };
  m.load = [slot, bytes](const std::byte* in) {
    auto h = Kokkos::create_mirror_view(*slot);
    std::memcpy(h.data(), in, bytes);
    Kokkos::deep_copy(*slot, h);
  };
  // Host memory: let the store read and write it in place (looked up at
  // each use, so it follows the swaps).
  if constexpr (Kokkos::SpaceAccessibility<Kokkos::HostSpace, typename View::memory_space>::accessible)
    m.host = [slot] { return reinterpret_cast<std::byte*>(slot->data()); };
  return m;
}

// Resolve an app's parameters inside fx: defaults < the YAML app: section
// (or --fx-set app.KEY=V) < the app's own flags in ctx.args().
inline void resolve_params(ParamSet& set, const fx::Context& ctx, const std::string& name,
                           const std::string& description) {
  const fx::Config& cfg = ctx.fx_config();
  const CliValues cli = parse_app_args(set, name, description, ctx.args());
  set.resolve(ctx.config(), cfg.source, cli, [&cfg](const std::string& key) {
    const auto it = cfg.origins.find("app." + key);
    return it == cfg.origins.end() ? std::string() : it->second.position;
  });
}

// Results into the run report (rank 0) and onto stdout as `result:` lines.
inline void publish_results(fx::Context& ctx, const Results& results) {
  if (ctx.rank() != 0) return;
  for (const auto& [key, text] : results.items()) ctx.report().set_result(key, text);
  for (const auto& [key, value] : results.timings()) {
    const bool seconds = key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0;
    if (seconds) ctx.report().set_phase_time(key.substr(0, key.size() - 2), value);
    else ctx.report().set_result(key, value);  // rates: not part of the answer
  }
  results.print();
}

}  // namespace miniapps
