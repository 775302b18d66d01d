#pragma once
// Deterministic fault injection: real signals at named points, keyed to a
// rank and an iteration or phase; never timers.
#include <fx/config.hpp>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

class DataStore;

enum class Phase { compute, halo, checkpoint, restore, repair, tryblock_commit, spare_idle, finalize };
std::string_view phase_name(Phase phase);
bool parse_phase(std::string_view text, Phase& out);

namespace detail {

// A process that failed, as the repair protocol saw it.
struct FailedProcess {
  int world_rank = -1;     // rank in MPI_COMM_WORLD
  int logical_rank = -1;   // -1: it was a spare
};

// Where a victim writes its kill time (fx::now()) just before dying, so the
// survivors can measure detection latency: "$FX_STATUS_FILE.kill.<world rank>",
// or "" when the job runs without the fx launcher.
std::string kill_stamp_path(int world_rank);

class Injector {
 public:
  Injector() = default;
  Injector(InjectConfig config, int world_rank, int world_size, int spares);

  // An injection point. Fires when an unfired spec matches this process
  // (identity: logical rank, -1 for a spare) at this phase and iteration:
  // kill actions write the kill stamp and raise the signal; bitflip flips a
  // bit of the named member in `store`.
  void at(Phase phase, std::int64_t iteration, int logical_rank, int logical_size, DataStore* store);
  // Cheap test for the hot path: false once nothing can fire any more.
  bool armed() const { return !pending_.empty(); }
  // Every live process calls this after each repair, so specs whose victim
  // died are marked fired everywhere: a recovered rank never re-kills itself.
  void on_repair(const std::vector<FailedProcess>& failed, std::int64_t iteration);
  const std::vector<InjectionSpec>& pending() const { return pending_; }

 private:
  std::vector<InjectionSpec> pending_;
  int world_rank_ = -1;
  int world_size_ = 0;
  int spares_ = 0;
};

}  // namespace detail
}  // namespace fx
