#pragma once
// What TryBlocks and Reinit keep per process, and their way into the runtime.
#include <fx/context.hpp>
#include <fx/tryblock.hpp>

#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime_services.hpp"

namespace fx::detail {

struct ContextAccess {
  static RuntimeServices& rt(Context& ctx);
  static std::shared_ptr<TryState>& try_state(Context& ctx) { return ctx.try_state_; }
};

struct TryState {
  // Counters restart on every process after each repair (a recruited spare
  // starts at zero): `epoch` is the recovery count they belong to.
  int epoch = -1;
  std::map<const CommSlot*, std::uint32_t> admissions;  // per communicator
  std::set<const CommSlot*> revoked_by_me;              // a commit deadline passed here
  // Blocks that rolled back, by (name, iteration): failing again there aborts.
  std::set<std::pair<std::string, std::int64_t>> rolled_back;
  std::vector<TryOutcome> log;
  TryFrame* top = nullptr;  // the innermost block whose body is running
  int tag_slots = 0;        // attempts before tag ranges are reused
};

// The state of `ctx`, its counters reset if a repair happened since.
TryState& try_state(Context& ctx);

}  // namespace fx::detail
