#pragma once
// Glue between the shared mini-app pieces and fx (fx apps only).
#include <miniapps/params.hpp>
#include <miniapps/results.hpp>

#include <fx/app.hpp>
#include <fx/context.hpp>
#include <fx/data_store/store.hpp>

#include <Kokkos_Core.hpp>

#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

namespace miniapps {

// Resolve an app's parameters inside fx: defaults < the YAML app: section
// (or --fx-set app.KEY=V) < the app's own flags in ctx.args().
inline void resolve_params(ParamSet& set, const fx::Context& ctx, const std::string& name,
                           const std::string& description) {
  set.resolve(ctx.config(), parse_app_args(set, name, description, ctx.args()));
}

// An app's Params (a struct with declare() and check()) resolved inside fx
// and checked against ctx.size() ranks.
template <class Params>
Params resolved_params(const fx::Context& ctx, const std::string& name, const std::string& description) {
  Params p;
  ParamSet set = p.declare();
  resolve_params(set, ctx, name, description);
  p.check(set, ctx.size());
  return p;
}

// The keys of an app: section (an app's config_keys(), which fx::run checks
// before any MPI communication).
template <class Params>
std::vector<std::string> param_keys() {
  Params p;
  return p.declare().keys();
}

// A job that starts from storage (checkpoint.hdf5.restart) takes the newest
// version there, whoever wrote it. One at or past this run's last step
// (`last`, set by the app key `key`) is another, longer run's: stepping on
// from it would print that run's answer one step further. Stop, naming
// the key and where it was set.
template <class Params>
void refuse_version_past_end(const fx::Context& ctx, const fx::RestoreInfo& info, const std::string& name,
                             const std::string& description, const std::string& key, std::int64_t last) {
  if (info.iteration < last) return;
  Params p;
  ParamSet set = p.declare();
  resolve_params(set, ctx, name, description);
  set.fail(key, "the version restored (" + std::string(fx::to_string(info.level)) + ", iteration " +
                    std::to_string(info.iteration) +
                    ") is at or past this run's last step: another, longer run's; give this run "
                    "checkpoint directories of its own, or start afresh (checkpoint.hdf5.restart: false)");
}

// Results into the run report (rank 0) and onto stdout as `result:` lines.
inline void publish_results(fx::Context& ctx, const Results& results) {
  if (ctx.rank() != 0) return;
  for (const auto& [key, text] : results.items()) ctx.report().set_result(key, text);
  for (const auto& [key, value] : results.timings()) {
    const bool seconds = key.size() > 2 && key.compare(key.size() - 2, 2, "_s") == 0;
    if (seconds)
      ctx.report().set_phase_time(key.substr(0, key.size() - 2), value);
    else
      ctx.report().set_result(key, value);  // rates: not part of the answer
  }
  results.print();
}

}  // namespace miniapps
