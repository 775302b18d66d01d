#pragma once
// Deterministic fault injection: real signals at named points, keyed to a
// rank and an iteration or phase; never timers.
#include <fx/config.hpp>
#include <fx/report.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace fx {

class DataStore;
struct Member;

// fx::Phase (the injection points) is declared with the configuration
// (fx/config.hpp; fx::to_string / fx::from_string<Phase> name them). This
// header is internal: applications only name a Phase (ctx.fault_point).

namespace detail {

// A process that failed, as the repair protocol saw it.
struct FailedProcess {
  int world_rank = -1;    // rank in MPI_COMM_WORLD
  int logical_rank = -1;  // -1: it was a spare
};

// Where a victim writes its kill stamp just before dying, so the survivors
// can measure detection latency, retire the spec that fired and record the
// iteration it died at: "$FX_STATUS_FILE.kill.<world rank>", or "" when the
// job runs without the fx launcher.
std::string kill_stamp_path(int world_rank);
// A kill stamp: when (fx::now()), the key of the spec that fired and the
// iteration its injection point named ("123.456000000 inject.failures[1] 45").
struct KillStamp {
  double time = -1;  // -1: no stamp, as for a death fx did not inject
  std::string key;
  std::int64_t iteration = -1;
};
KillStamp read_kill_stamp(int world_rank);

// Where the victim of spec `key` marks its arrival at the spec's point
// before it waits for the other victims there (Injector::at):
// "$FX_STATUS_FILE.meet.<launch attempt>.<key>", or "" without the launcher.
std::string meet_path(const std::string& key);

// Whether this process is the target of `s`: the one place a spec's target
// (rank, world, spare, buddy-of) meets the job's real membership. `spares`
// are the world ranks of the spares in spare order (as spares.placement chose
// them), so `spare:i` is the i-th of them, not world rank N+i; a spare
// target matches only while that process is still a spare (logical -1).
bool is_target(const InjectionSpec& s, int world_rank, int logical_rank, int logical_size, int buddy_distance,
               const std::vector<int>& spares);

class Injector {
 public:
  Injector() = default;
  // `spares`: the spares' world ranks in spare order (see is_target).
  Injector(const InjectConfig& config, int world_rank, int world_size, std::vector<int> spares);

  // An injection point. Fires when an unfired spec matches this process
  // (identity: logical rank, -1 for a spare) at this phase and iteration:
  // kill actions write the kill stamp and raise the signal; bitflip flips a
  // bit of the named member in `store`. Kills that the schedule puts at one
  // point (the same iteration and phase) on several processes happen
  // together: each victim marks its arrival (meet_path) and waits for the
  // others' marks, at most meet_timeout seconds, so none of the deaths is
  // noticed before every victim has reached the point.
  void at(Phase phase, std::int64_t iteration, int logical_rank, int logical_size, DataStore* store);
  // Cheap test for the hot path: false once nothing can fire any more.
  bool armed() const { return !pending_.empty(); }
  // Every live process calls this after each repair, so specs whose victim
  // died are marked fired everywhere: a recovered rank never re-kills itself.
  void on_repair(const std::vector<FailedProcess>& failed, std::int64_t iteration);
  const std::vector<InjectionSpec>& pending() const { return pending_; }
  // A bit flip fires on its victim alone, so which specs no rank fired is
  // the minimum over the active ranks of these flags (1: pending here), one
  // per schedule entry; fired_elsewhere takes that minimum back.
  std::vector<int> pending_flags() const;
  void fired_elsewhere(const std::vector<int>& pending_everywhere);
  // After fired_elsewhere (a finished run): the specs that never fired;
  // the speaker warns once and puts them in the report.
  std::vector<UnfiredInjection> unfired() const;
  void report_unfired(Report& report) const;
  // The distance buddy-of counts with: the store's, which may differ from
  // the configured one (set at start-up and after each repair, everywhere).
  void set_buddy_distance(int d) { buddy_distance_ = d; }

  // Extensions.
  // The whole schedule as built at construction (repeats expanded, chaos
  // drawn): the same config and job size give the same list everywhere.
  const std::vector<InjectionSpec>& schedule() const { return schedule_; }
  // Tests: called instead of killing the process (signal number, or 0 for
  // bitflip) after the spec is marked fired.
  using Killer = std::function<void(const InjectionSpec& spec, int signal)>;
  void set_killer(Killer killer) { killer_ = std::move(killer); }
  // Tests: how long a victim waits for the others at its point.
  void set_meet_timeout(double seconds) { meet_timeout_ = seconds; }

 private:
  void fire(const InjectionSpec& s, Phase phase, std::int64_t iteration, int logical_rank, DataStore* store);
  // Whether the schedule kills every logical rank at s's point (iteration
  // and phase) in a job without spares: the whole job dies there.
  bool kills_whole_job(const InjectionSpec& s) const;
  // The pending kill specs at s's point on other processes than this one
  // (logical_rank): the victims s's victim waits for.
  std::vector<InjectionSpec> fellow_victims(const InjectionSpec& s, int logical_rank) const;
  // Marks s's arrival and waits for the fellows' marks (or meet_timeout_).
  void meet(const InjectionSpec& s, const std::vector<InjectionSpec>& fellows) const;

  std::vector<InjectionSpec> pending_;
  std::vector<InjectionSpec> schedule_;
  int world_rank_ = -1;
  std::vector<int> spares_;
  int buddy_distance_ = 1;
  int logical_size_ = 0;  // the last size seen by at(), for buddy-of after repairs
  Killer killer_;
  // A fellow victim that is late by more than this has likely been stopped
  // by the death of another (its point then never comes): die alone.
  double meet_timeout_ = 5.0;
  bool settled_ = false;  // fired_elsewhere was called
};

// A spec in FX_INJECT's short form (TARGET@WHEN[:ACTION]; a bit flip with
// its member), for messages.
std::string spec_text(const InjectionSpec& s);

// The chaos schedule: up to config.chaos_max_failures specs on logical ranks
// 0..active-1, gaps exponential with mean chaos_mtbf_iterations, from a
// 64-bit generator seeded with chaos_seed (no std:: distributions, whose
// output differs between standard libraries).
std::vector<InjectionSpec> chaos_schedule(const InjectConfig& config, int active);

// Flips one bit of a member's bytes (save, flip, load). element < 0: the
// middle element; bit < 0: the lowest exponent bit for float32/float64 (the
// value doubles or halves), bit 0 otherwise. Returns the byte offset flipped.
std::size_t flip_bit(const Member& member, std::int64_t element, int bit);

}  // namespace detail
}  // namespace fx
