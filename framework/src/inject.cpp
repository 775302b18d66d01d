// Deterministic fault injection. The schedule is a pure function of the
// configuration and the job's size, so every process holds the same list;
// a spec fires on its victim at the first injection point that matches, and
// after each repair every live process drops the specs whose victims died.
#include <fx/clock.hpp>
#include <fx/data_store/member_shape.hpp>
#include <fx/data_store/store.hpp>
#include <fx/detail/files.hpp>
#include <fx/detail/status.hpp>
#include <fx/error.hpp>
#include <fx/exit_code.hpp>
#include <fx/inject.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>
#include <utility>

#include "config_detail.hpp"

namespace fx {
namespace {

bool kills(const InjectionSpec& s) { return s.action != InjectAction::bitflip; }

int signal_of(InjectAction a) {
  switch (a) {
    case InjectAction::sigkill:
      return SIGKILL;
    case InjectAction::sigterm:
      return SIGTERM;
    case InjectAction::sigsegv:
      return SIGSEGV;
    case InjectAction::abort:
      return SIGABRT;
    case InjectAction::sigstop:
      return SIGSTOP;
    case InjectAction::bitflip:
      return 0;
  }
  return 0;
}

// splitmix64: tiny, well mixed, and defined bit for bit everywhere.
struct SplitMix64 {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }  // [0, 1)
};

}  // namespace

namespace detail {

namespace {
// "$FX_STATUS_FILE<suffix>", or "" when the job runs without the launcher.
std::string beside_status(const std::string& suffix) {
  const char* status = std::getenv("FX_STATUS_FILE");
  if (status == nullptr || *status == '\0') return "";
  return status + suffix;
}
}  // namespace

std::string kill_stamp_path(int world_rank) { return beside_status(fmt::format(".kill.{}", world_rank)); }

std::string meet_path(const std::string& key) {
  return beside_status(fmt::format(".meet.{}.{}", launch_attempt(), key));
}

KillStamp read_kill_stamp(int world_rank) {
  const std::string path = kill_stamp_path(world_rank);
  KillStamp stamp;
  if (path.empty()) return stamp;
  std::ifstream in(path);
  KillStamp read;
  if (in >> read.time >> read.key >> read.iteration) return read;
  return stamp;
}

std::vector<InjectionSpec> chaos_schedule(const InjectConfig& config, int active) {
  std::vector<InjectionSpec> out;
  if (!config.chaos || active <= 0 || config.chaos_mtbf_iterations <= 0) return out;
  SplitMix64 rng{config.chaos_seed};
  std::int64_t it = config.chaos_start - 1;
  for (int k = 0; k < config.chaos_max_failures; ++k) {
    const double gap = -config.chaos_mtbf_iterations * std::log1p(-rng.uniform());
    it += std::max<std::int64_t>(1, std::llround(gap));
    InjectionSpec s;
    s.target_kind = TargetKind::rank;
    s.target = static_cast<int>(rng.next() % static_cast<std::uint64_t>(active));
    s.iteration = it;
    s.phase = config.chaos_phase;
    s.action = config.chaos_action;
    s.origin = config.chaos_origin;
    s.key = fmt::format("inject.chaos[{}]", k);
    out.push_back(std::move(s));
  }
  return out;
}

std::size_t flip_bit(const Member& registered, std::int64_t element, int bit) {
  const Member member = detail::current(registered);  // a resizable member at its extents now
  std::size_t count = 1;
  for (auto e : member.extents) count *= e;
  if (member.bytes == 0 || count == 0)
    FX_THROW(UsageError, fmt::format("bitflip: member '{}' is empty", member.name));
  const std::size_t width = std::max<std::size_t>(1, member.bytes / count);
  const std::size_t index = element < 0 ? count / 2 : static_cast<std::size_t>(element);
  if (index >= count)
    FX_THROW(UsageError, fmt::format("bitflip: element {} is out of range for member '{}' ({} elements)",
                                     index, member.name, count));
  if (bit < 0) bit = member.type == "float64" ? 52 : member.type == "float32" ? 23 : 0;
  if (static_cast<std::size_t>(bit) >= width * 8)
    FX_THROW(UsageError, fmt::format("bitflip: bit {} is out of range for member '{}' ({}-byte elements)",
                                     bit, member.name, width));
  std::vector<std::byte> buf(member.bytes);
  member.save(buf.data());
  // Little-endian: bit k of an element lives in its byte k / 8.
  const std::size_t offset = index * width + static_cast<std::size_t>(bit) / 8;
  buf[offset] ^= std::byte{static_cast<unsigned char>(1u << (bit % 8))};
  member.load(buf.data());
  return offset;
}

bool is_target(const InjectionSpec& s, int world_rank, int logical_rank, int logical_size, int buddy_distance,
               const std::vector<int>& spares) {
  switch (s.target_kind) {
    case TargetKind::rank:
      return logical_rank == s.target;
    case TargetKind::world:
      return world_rank == s.target;
    case TargetKind::spare:
      return logical_rank < 0 && s.target >= 0 && s.target < static_cast<int>(spares.size()) &&
             world_rank == spares[static_cast<std::size_t>(s.target)];
    case TargetKind::buddy_of:
      return logical_rank >= 0 && logical_size > 0 &&
             logical_rank == (s.target + buddy_distance) % logical_size;
  }
  return false;
}

Injector::Injector(const InjectConfig& config, int world_rank, int world_size, std::vector<int> spares)
    : world_rank_(world_rank),
      spares_(std::move(spares)),
      buddy_distance_(config.buddy_distance),
      logical_size_(world_size - static_cast<int>(spares_.size())) {
  for (const auto& s : config.failures) {
    if (s.attempt != launch_attempt()) continue;  // another launch's (under --supervise)
    for (int k = 0; k < std::max(1, s.repeat); ++k) {
      InjectionSpec copy = s;
      copy.repeat = 1;
      if (s.iteration >= 0) copy.iteration = s.iteration + k * s.every;
      if (s.repeat > 1) copy.key = fmt::format("{}#{}", s.key, k + 1);
      schedule_.push_back(std::move(copy));
    }
  }
  if (launch_attempt() == 1) {
    for (auto& s : chaos_schedule(config, logical_size_)) schedule_.push_back(std::move(s));
  }
  pending_ = schedule_;
}

void Injector::at(Phase phase, std::int64_t iteration, int logical_rank, int logical_size, DataStore* store) {
  if (pending_.empty()) return;
  if (logical_size > 0) logical_size_ = logical_size;
  for (std::size_t i = 0; i < pending_.size();) {
    const InjectionSpec& s = pending_[i];
    const bool when = (s.iteration < 0 || iteration >= s.iteration) && (!s.phase || *s.phase == phase);
    if (!when || !is_target(s, world_rank_, logical_rank, logical_size_, buddy_distance_, spares_)) {
      ++i;
      continue;
    }
    InjectionSpec spec = s;
    pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(i));
    fire(spec, phase, iteration, logical_rank, store);  // returns only for bitflips (or a test killer)
    if (kills(spec)) return;                            // one death per point, as for real
  }
}

namespace {

// Who an injection hits and where, for its log line (spares and start-up
// count no iterations).
std::string victim_name(Phase phase, int logical_rank) {
  if (phase == Phase::start) return "a process";
  return logical_rank >= 0 ? fmt::format("logical rank {}", logical_rank) : "spare";
}
std::string point_name(Phase phase, std::int64_t iteration) {
  return iteration >= 0 ? fmt::format("{} iteration {}", to_string(phase), iteration)
                        : std::string(to_string(phase));
}

// A bitflip spec's member flipped in `store`; the byte offset flipped.
std::size_t flip_member(const InjectionSpec& s, DataStore& store) {
  const auto& members = store.members();
  const auto it =
      std::find_if(members.begin(), members.end(), [&](const Member& m) { return m.name == s.member; });
  if (it == members.end()) {
    std::vector<std::string> names;
    for (const auto& m : members) names.push_back(m.name);
    FX_THROW(ConfigError, s.origin, s.key + ".member",
             fmt::format("expected a registered member ({}){}, got '{}'",
                         names.empty() ? "none registered" : "one of " + join(names),
                         suggestion(s.member, names), s.member));
  }
  try {
    return flip_bit(*it, s.element, s.bit);
  } catch (const UsageError& e) {
    FX_THROW(ConfigError, s.origin, s.key,
             fmt::format("expected a bit inside the member, got '{}'", e.what()));
  }
}

}  // namespace

void Injector::fire(const InjectionSpec& s, Phase phase, std::int64_t iteration, int logical_rank,
                    DataStore* store) {
  const std::string who = victim_name(phase, logical_rank);
  const std::string when = point_name(phase, iteration);
  if (!kills(s)) {
    const std::size_t offset = store != nullptr ? flip_member(s, *store) : 0;
    log::warn("inject {}: bitflip in '{}' (byte {}) on {} (world {}) at {}", s.key, s.member, offset, who,
              world_rank_, when);
    if (killer_) killer_(s, 0);
    return;
  }
  const std::vector<InjectionSpec> fellows = fellow_victims(s, logical_rank);
  std::vector<std::string> fellow_keys;
  for (const auto& f : fellows) fellow_keys.push_back(f.key);
  log::warn("inject {}: {} on {} (world {}) at {}{}", s.key, to_string(s.action), who, world_rank_, when,
            fellows.empty() ? "" : fmt::format(", together with {}", join(fellow_keys)));
  // Nobody survives to write the verdict (the launcher would wait on
  // mpiexec): rank 0 writes it before it dies.
  if (logical_rank == 0 && kills_whole_job(s)) {
    write_status(ExitCode::aborted, fmt::format("inject {}: every process killed at {} iteration {}", s.key,
                                                to_string(phase), iteration));
  }
  meet(s, fellows);
  if (killer_) {
    killer_(s, signal_of(s.action));
    return;
  }
  // The stamp lets survivors measure detection latency on this node's clock,
  // and retire the spec that fired (on_repair).
  const std::string stamp = kill_stamp_path(world_rank_);
  if (!stamp.empty()) write_replacing(stamp, fmt::format("{:.9f} {} {}\n", now(), s.key, iteration), 0644);
  if (s.action == InjectAction::abort) std::abort();
  std::raise(signal_of(s.action));
  if (s.action == InjectAction::sigstop) return;  // continued (SIGCONT): the hang is over
  // SIGTERM/SIGSEGV may be caught by a handler; make sure the victim dies.
  std::raise(SIGKILL);
}

bool Injector::kills_whole_job(const InjectionSpec& s) const {
  if (!spares_.empty() || logical_size_ <= 0) return false;
  for (int q = 0; q < logical_size_; ++q) {
    const bool killed = std::any_of(schedule_.begin(), schedule_.end(), [&](const InjectionSpec& o) {
      return kills(o) && o.iteration == s.iteration && o.phase == s.phase &&
             is_target(o, -1, q, logical_size_, buddy_distance_, spares_);
    });
    if (!killed) return false;
  }
  return true;
}

std::vector<InjectionSpec> Injector::fellow_victims(const InjectionSpec& s, int logical_rank) const {
  std::vector<InjectionSpec> out;
  if (s.iteration < 0 || s.target_kind == TargetKind::spare) return out;  // spares count no iterations
  for (const auto& o : pending_) {
    if (!kills(o) || o.iteration != s.iteration || o.phase != s.phase || o.target_kind == TargetKind::spare)
      continue;
    const bool here = is_target(o, world_rank_, logical_rank, logical_size_, buddy_distance_, spares_);
    if (!here) out.push_back(o);
  }
  return out;
}

void Injector::meet(const InjectionSpec& s, const std::vector<InjectionSpec>& fellows) const {
  const std::string mark = meet_path(s.key);
  if (fellows.empty() || mark.empty()) return;
  if (const std::string why = write_replacing(mark, "", 0644); !why.empty())
    log::warn("inject {}: cannot mark its arrival in {}: {}", s.key, mark, why);
  std::vector<std::pair<std::string, std::string>> marks;  // key, its mark's path
  for (const auto& f : fellows) marks.emplace_back(f.key, meet_path(f.key));
  std::vector<std::string> missing;
  const double deadline = now() + meet_timeout_;
  for (;;) {
    missing.clear();
    for (const auto& [key, path] : marks)
      if (::access(path.c_str(), F_OK) != 0) missing.push_back(key);
    if (missing.empty() || now() >= deadline) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  if (!missing.empty())
    log::warn("inject {}: {} did not reach this point within {:g} s; dying without waiting longer", s.key,
              join(missing), meet_timeout_);
}

void Injector::on_repair(const std::vector<FailedProcess>& failed, std::int64_t iteration) {
  auto victim_is = [&](const InjectionSpec& s, const FailedProcess& f) {
    return is_target(s, f.world_rank, f.logical_rank, logical_size_, buddy_distance_, spares_);
  };
  // Each death retires the spec that killed it, as the victim's kill stamp
  // names it (the earliest by iteration once retired another one, which
  // then fired a second time on the recruit while the named one vanished).
  // Without a stamp, the victim's earliest kill spec; survivors may detect
  // it at different iterations, so `iteration` plays no part in this choice.
  for (const auto& f : failed) {
    const std::string fired = read_kill_stamp(f.world_rank).key;
    auto best = pending_.end();
    for (auto it = pending_.begin(); it != pending_.end(); ++it) {
      if (!kills(*it) || !victim_is(*it, f)) continue;
      if (!fired.empty()) {
        if (it->key == fired) best = it;
      } else if (best == pending_.end() || it->iteration < best->iteration) {
        best = it;
      }
    }
    if (best != pending_.end()) pending_.erase(best);
  }
  // A dead victim's bitflips up to here happened (or never will): drop them
  // so its replacement does not flip again.
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const InjectionSpec& s) {
                                  if (kills(s) || s.iteration > iteration) return false;
                                  return std::any_of(failed.begin(), failed.end(),
                                                     [&](const FailedProcess& f) { return victim_is(s, f); });
                                }),
                 pending_.end());
}

std::vector<int> Injector::pending_flags() const {
  std::vector<int> flags;
  for (const auto& s : schedule_) {
    const bool pending =
        std::any_of(pending_.begin(), pending_.end(), [&](const InjectionSpec& p) { return p.key == s.key; });
    flags.push_back(pending ? 1 : 0);
  }
  return flags;
}

void Injector::fired_elsewhere(const std::vector<int>& pending_everywhere) {
  settled_ = true;
  for (std::size_t i = 0; i < schedule_.size() && i < pending_everywhere.size(); ++i) {
    if (pending_everywhere[i] != 0) continue;
    const std::string& key = schedule_[i].key;
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](const InjectionSpec& p) { return p.key == key; }),
                   pending_.end());
  }
}

std::vector<UnfiredInjection> Injector::unfired() const {
  std::vector<UnfiredInjection> out;
  if (!settled_) return out;  // an aborted run: what would have fired is unknown
  for (const auto& s : pending_) out.push_back({spec_text(s), s.key, s.origin});
  return out;
}

void Injector::report_unfired(Report& report) const {
  const std::vector<UnfiredInjection> specs = unfired();
  if (specs.empty()) return;
  std::vector<std::string> named;
  for (const auto& u : specs) named.push_back(fmt::format("{} ({}, {})", u.spec, u.key, u.origin));
  log::warn("inject: {} spec(s) never fired: {}", specs.size(), fmt::join(named, "; "));
  report.set_unfired(specs);
}

std::string spec_text(const InjectionSpec& s) {
  std::string text = s.target_kind == TargetKind::rank
                         ? std::to_string(s.target)
                         : fmt::format("{}:{}", to_string(s.target_kind), s.target);
  text += '@';
  if (s.iteration >= 0) text += std::to_string(s.iteration);
  if (s.iteration >= 0 && s.phase) text += '/';
  if (s.phase) text += std::string(to_string(*s.phase));
  if (s.action != InjectAction::sigkill) text += ":" + std::string(to_string(s.action));
  if (s.action == InjectAction::bitflip) text += " member=" + s.member;
  return text;
}

}  // namespace detail
}  // namespace fx
