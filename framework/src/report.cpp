// The run report: one YAML document per run (schema in docs/config.md,
// reference in tests/unit/config/data/report_reference.yaml) and the human
// summary printed at the end. Numbers are written in fixed notation with at
// most six decimals, so every YAML reader (also YAML 1.1 ones such as
// PyYAML, used by ./fx plot) reads them as numbers.
#include <fx/config_yaml.hpp>
#include <fx/detail/files.hpp>
#include <fx/error.hpp>
#include <fx/report.hpp>

#include <Kokkos_Core.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <numeric>

namespace fx {
namespace {

constexpr int kSchemaVersion = 1;

std::string num(double x) {
  if (!std::isfinite(x)) return "-1";
  std::string s = fmt::format("{:.6f}", x);
  s.erase(s.find_last_not_of('0') + 1);
  if (s.back() == '.') s.pop_back();
  return s == "-0" ? "0" : s;
}

// A name the report wrote, read back (adopt_history): one of E's names.
template <class E>
E enum_of(const YAML::Node& node, const char* key) {
  const std::string text = node[key].as<std::string>();
  if (const auto value = from_string<E>(text)) return *value;
  FX_THROW(Error, fmt::format("run history: {} '{}' is not one of {}", key, text, enum_choices<E>()));
}

void emit_placement(YAML::Emitter& out, const Placement& p, bool earlier) {
  out << YAML::Key << "placement" << YAML::Value << YAML::BeginMap;
  if (earlier) out << YAML::Key << "before_last_repair" << YAML::Value << true;
  out << YAML::Key << "buddy_distance" << YAML::Value << p.buddy_distance;
  out << YAML::Key << "ranks" << YAML::Value << YAML::BeginSeq;
  for (const auto& r : p.ranks) {
    out << YAML::Flow << YAML::BeginMap;
    out << YAML::Key << "logical" << YAML::Value << r.logical;
    out << YAML::Key << "world_rank" << YAML::Value << r.world_rank;
    out << YAML::Key << "host" << YAML::Value << r.host;
    out << YAML::Key << "copy_holder" << YAML::Value << r.copy_holder;
    out << YAML::Key << "copy_host" << YAML::Value << r.copy_host;
    out << YAML::Key << "device" << YAML::Value << r.device;
    out << YAML::EndMap;
  }
  out << YAML::EndSeq;
  out << YAML::Key << "spares" << YAML::Value << YAML::BeginSeq;
  for (const auto& [world, host] : p.spares) {
    out << YAML::Flow << YAML::BeginMap << YAML::Key << "world_rank" << YAML::Value << world << YAML::Key
        << "host" << YAML::Value << host << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
}

// "host a: ranks 0 3, spare world rank 5; host b: ranks 1 2; buddy copies on another
// host: 4 of 4 (distance 2)", or "" before any placement was recorded.
std::string placement_text(const Placement& p) {
  if (p.ranks.empty()) return "";
  std::vector<std::pair<std::string, std::pair<std::string, std::string>>> hosts;  // host, (ranks, spares)
  auto at = [&](const std::string& h) -> std::pair<std::string, std::string>& {
    for (auto& e : hosts)
      if (e.first == h) return e.second;
    return hosts.emplace_back(h, std::pair<std::string, std::string>{}).second;
  };
  for (const auto& r : p.ranks) at(r.host).first += fmt::format(" {}", r.logical);
  for (const auto& [world, host] : p.spares) at(host).second += fmt::format(" {}", world);
  std::string s;
  for (const auto& [h, rs] : hosts) {
    // A spare has no logical rank yet: it is named by its world rank.
    const bool several = rs.second.find(' ', 1) != std::string::npos;
    const std::string spares = fmt::format("spare world rank{}{}", several ? "s" : "", rs.second);
    s += fmt::format("{}{}:{}{}", s.empty() ? "" : "; ", h, rs.first.empty() ? "" : " ranks" + rs.first,
                     rs.second.empty() ? "" : (rs.first.empty() ? " " : ", ") + spares);
  }
  if (p.buddy_distance > 0) {
    const auto apart = std::count_if(p.ranks.begin(), p.ranks.end(),
                                     [](const RankPlacement& r) { return r.copy_host != r.host; });
    s += fmt::format("; buddy copies on another host: {} of {} (distance {})", apart, p.ranks.size(),
                     p.buddy_distance);
  }
  return s;
}

std::string ms(double seconds) { return seconds < 0 ? "?" : fmt::format("{:.1f} ms", seconds * 1e3); }

std::string bytes_text(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt::format("{:.1f} {}", b, units[u]);
}

std::string ranks_text(const std::vector<int>& v) {
  std::string out;
  for (std::size_t i = 0; i < v.size(); ++i) out += (i ? "," : "") + std::to_string(v[i]);
  return out;
}

Platform detect_platform() {
  Platform p;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) p.hostname = host;
  // Allowed before MPI_Init and after MPI_Finalize.
  char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  if (MPI_Get_library_version(lib, &len) == MPI_SUCCESS) {
    std::string v(lib, static_cast<std::size_t>(std::max(0, len)));
    v = v.substr(0, v.find_first_of(",\n"));
    p.mpi_version = v;
  }
#ifdef KOKKOS_VERSION
  p.kokkos_version =
      fmt::format("{}.{}.{}", KOKKOS_VERSION / 10000, KOKKOS_VERSION / 100 % 100, KOKKOS_VERSION % 100);
#endif
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
  p.date = date;
  return p;
}

void emit_ints(YAML::Emitter& out, const std::vector<int>& v) {
  out << YAML::Flow << YAML::BeginSeq;
  for (int x : v) out << x;
  out << YAML::EndSeq;
}

// One entry of each list the report keeps.
void emit(YAML::Emitter& out, const FailureRecord& f) {
  out << YAML::BeginMap;
  out << YAML::Key << "world_rank" << YAML::Value << f.world_rank;
  out << YAML::Key << "logical_rank" << YAML::Value << f.logical_rank;
  out << YAML::Key << "host" << YAML::Value << f.host;
  out << YAML::Key << "time" << YAML::Value << num(f.time);
  out << YAML::Key << "detection_latency" << YAML::Value << num(f.detection_latency);
  out << YAML::Key << "iteration" << YAML::Value << f.iteration;
  out << YAML::EndMap;
}

void emit(YAML::Emitter& out, const RecoveryRecord& r) {
  out << YAML::BeginMap;
  out << YAML::Key << "start" << YAML::Value << num(r.start);
  out << YAML::Key << "action" << YAML::Value << std::string(to_string(r.action));
  out << YAML::Key << "failed_world_ranks" << YAML::Value;
  emit_ints(out, r.failed_world_ranks);
  out << YAML::Key << "failed_logical_ranks" << YAML::Value;
  emit_ints(out, r.failed_logical_ranks);
  out << YAML::Key << "rounds" << YAML::Value << r.rounds;
  out << YAML::Key << "new_size" << YAML::Value << r.new_size;
  out << YAML::Key << "restored_iteration" << YAML::Value << r.restored_iteration;
  out << YAML::Key << "restored_level" << YAML::Value << std::string(to_string(r.restored_level));
  if (r.interrupted) out << YAML::Key << "interrupted" << YAML::Value << true;
  if (r.stopped) out << YAML::Key << "stopped" << YAML::Value << true;
  out << YAML::Key << "seconds" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "detect" << YAML::Value << num(r.detect_s);
  out << YAML::Key << "revoke" << YAML::Value << num(r.revoke_s);
  out << YAML::Key << "shrink" << YAML::Value << num(r.shrink_s);
  out << YAML::Key << "agree" << YAML::Value << num(r.agree_s);
  out << YAML::Key << "rebuild" << YAML::Value << num(r.rebuild_s);
  out << YAML::Key << "restore" << YAML::Value << num(r.restore_s);
  out << YAML::Key << "total" << YAML::Value << num(r.total_s);
  out << YAML::EndMap;
  out << YAML::EndMap;
}

void emit(YAML::Emitter& out, const SkippedVersion& v) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "level" << YAML::Value
      << std::string(to_string(v.level)) << YAML::Key << "iteration" << YAML::Value << v.iteration
      << YAML::Key << "why" << YAML::Value << v.why << YAML::EndMap;
}

void emit_start(YAML::Emitter& out, const StartRecord& r) {
  out << YAML::Key << "start" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "level" << YAML::Value << std::string(to_string(r.level));
  out << YAML::Key << "iteration" << YAML::Value << r.iteration;
  if (r.old_size > 0) out << YAML::Key << "old_size" << YAML::Value << r.old_size;
  out << YAML::Key << "skipped" << YAML::Value << YAML::Flow << YAML::BeginSeq;
  for (const auto& v : r.skipped) emit(out, v);
  out << YAML::EndSeq << YAML::EndMap;
}

void emit(YAML::Emitter& out, const CheckpointRecord& c) {
  out << YAML::Flow << YAML::BeginMap;
  out << YAML::Key << "iteration" << YAML::Value << c.iteration;
  out << YAML::Key << "time" << YAML::Value << num(c.time);
  out << YAML::Key << "level" << YAML::Value << std::string(to_string(c.level));
  out << YAML::Key << "bytes" << YAML::Value << c.bytes;
  out << YAML::Key << "seconds" << YAML::Value << num(c.seconds);
  out << YAML::Key << "bandwidth" << YAML::Value << num(c.bandwidth);
  if (c.committed_s > 0) {
    out << YAML::Key << "committed_s" << YAML::Value << num(c.committed_s);
    out << YAML::Key << "background_s" << YAML::Value << num(c.background_s);
  }
  if (c.next_interval > 0) {
    out << YAML::Key << "next_interval" << YAML::Value << c.next_interval;
    out << YAML::Key << "expected_waste" << YAML::Value << num(c.expected_waste);
  }
  out << YAML::EndMap;
}

void emit(YAML::Emitter& out, const TryBlockRecord& t) {
  out << YAML::BeginMap;
  out << YAML::Key << "name" << YAML::Value << t.name;
  out << YAML::Key << "outcome" << YAML::Value << std::string(to_string(t.outcome));
  out << YAML::Key << "attempts" << YAML::Value << t.attempts;
  out << YAML::Key << "errors" << YAML::Value << t.errors;
  if (t.iteration >= 0) out << YAML::Key << "iteration" << YAML::Value << t.iteration;
  out << YAML::EndMap;
}

void emit(YAML::Emitter& out, const UnfiredInjection& u) {
  out << YAML::Flow << YAML::BeginMap << YAML::Key << "spec" << YAML::Value << u.spec << YAML::Key << "key"
      << YAML::Value << u.key << YAML::Key << "origin" << YAML::Value << u.origin << YAML::EndMap;
}

// `key:` and the list's entries, each by emit().
template <class Record>
void emit_list(YAML::Emitter& out, const char* key, const std::vector<Record>& list) {
  out << YAML::Key << key << YAML::Value << YAML::BeginSeq;
  for (const auto& r : list) emit(out, r);
  out << YAML::EndSeq;
}

void emit_platform(YAML::Emitter& out, const Platform& p, int active, int spares, int world_size) {
  out << YAML::Key << "platform" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "hostname" << YAML::Value << p.hostname;
  out << YAML::Key << "mpi_version" << YAML::Value << p.mpi_version;
  out << YAML::Key << "kokkos_version" << YAML::Value << p.kokkos_version;
  out << YAML::Key << "date" << YAML::Value << p.date;
  out << YAML::Key << "active_ranks" << YAML::Value << active;
  out << YAML::Key << "spares" << YAML::Value << spares;
  out << YAML::Key << "world_size" << YAML::Value << world_size;
  out << YAML::EndMap;
}

// The summary's parts.
std::string phases_text(const std::map<std::string, double>& phases) {
  // The run's own order first, then anything else the runtime timed.
  std::vector<std::string> order = {"setup", "initialize", "steps", "finish", "total"};
  for (const auto& kv : phases)
    if (std::find(order.begin(), order.end(), kv.first) == order.end())
      order.insert(order.end() - 1, kv.first);
  std::string p;
  for (const auto& k : order) {
    const auto it = phases.find(k);
    if (it != phases.end()) p += fmt::format("{}{} {:.3f} s", p.empty() ? "" : ", ", k, it->second);
  }
  return p;
}

std::string failure_line(const FailureRecord& f) {
  return fmt::format(
      "    {} (world {}{}) at {:.3f} s, iteration {}, detected after {}",
      f.logical_rank >= 0 ? fmt::format("logical rank {}", f.logical_rank) : std::string("spare"),
      f.world_rank, f.host.empty() ? "" : ", " + f.host, f.time, f.iteration, ms(f.detection_latency));
}

std::string restored_text(const RecoveryRecord& r) {
  return r.restored_level == CheckpointLevel::none
             ? std::string("none")
             : fmt::format("iteration {} from {}", r.restored_iteration, to_string(r.restored_level));
}

std::string recovery_line(std::size_t number, const RecoveryRecord& r) {
  const std::string end =
      r.stopped ? fmt::format("then stopped by policy before resuming (restored: {})", restored_text(r))
      : r.interrupted
          ? fmt::format("interrupted by another failure before resuming (restored: {})", restored_text(r))
          : fmt::format("resumed at iteration {} from {}", r.restored_iteration, to_string(r.restored_level));
  return fmt::format(
      "    #{} at {:.3f} s: {} ranks [{}] in {} (revoke {}, shrink {}, agree {}, rebuild {}, restore {}), {}",
      number, r.start, to_string(r.action), ranks_text(r.failed_logical_ranks), ms(r.total_s), ms(r.revoke_s),
      ms(r.shrink_s), ms(r.agree_s), ms(r.rebuild_s), ms(r.restore_s), end);
}

// "" for a plain start from scratch.
std::string start_line(const StartRecord& r) {
  std::vector<std::string> skipped;
  for (const auto& v : r.skipped)
    skipped.push_back(fmt::format("{} iteration {} ({})", to_string(v.level), v.iteration, v.why));
  const std::string passed =
      skipped.empty() ? "" : fmt::format("; passed over: {}", fmt::join(skipped, ", "));
  if (r.level == CheckpointLevel::none)
    return skipped.empty() ? "" : fmt::format("  start: from scratch{}", passed);
  return fmt::format("  start: cold restart at iteration {} from {}{}{}", r.iteration, to_string(r.level),
                     r.old_size > 0 ? fmt::format(" (written by {} ranks)", r.old_size) : "", passed);
}

// Per level: count, size and time of its checkpoints (and of the
// asynchronous ones); then the automatic interval last chosen.
std::vector<std::string> checkpoint_lines(const std::vector<CheckpointRecord>& checkpoints) {
  std::vector<std::string> lines;
  for (const CheckpointLevel level :
       {CheckpointLevel::memory, CheckpointLevel::node, CheckpointLevel::hdf5}) {
    std::size_t n = 0, async = 0;
    double bytes = 0, secs = 0, a_secs = 0, a_after = 0, a_committed = 0;
    for (const auto& c : checkpoints) {
      if (c.level != level) continue;
      ++n, bytes += static_cast<double>(c.bytes), secs += c.seconds;
      if (c.committed_s <= 0) continue;
      ++async, a_secs += c.seconds, a_after += c.background_s, a_committed += c.committed_s;
    }
    if (n == 0) continue;
    const double each = static_cast<double>(n);
    lines.push_back(fmt::format("  checkpoints ({}): {}, {} per rank each, {:.1f} ms each, {}/s",
                                to_string(level), n, bytes_text(bytes / each), secs / each * 1e3,
                                bytes_text(secs > 0 ? bytes / secs : 0)));
    if (async > 0) {
      const double k = static_cast<double>(async);
      lines.push_back(
          fmt::format("    {} asynchronous: the app waited {:.1f} ms in the commit and {:.1f} ms after it, "
                      "committed after {:.1f} ms",
                      async, a_secs / k * 1e3, a_after / k * 1e3, a_committed / k * 1e3));
    }
  }
  const auto chosen = std::find_if(checkpoints.rbegin(), checkpoints.rend(),
                                   [](const CheckpointRecord& c) { return c.next_interval > 0; });
  if (chosen != checkpoints.rend())
    lines.push_back(fmt::format(
        "  checkpoint interval (auto): every {} iterations after iteration {}, expected waste {:.1f} %",
        chosen->next_interval, chosen->iteration, chosen->expected_waste * 100));
  return lines;
}

// The summary's first line: who ran, where, and the verdict.
std::string headline(const std::string& app, int active, int spares, const std::string& hostname,
                     ExitCode exit, const std::string& exit_text) {
  return fmt::format("fx: {}{} active + {} spare ranks on {}: {} (exit {}){}", app.empty() ? "" : app + ", ",
                     active, spares, hostname.empty() ? "?" : hostname, to_string(exit),
                     static_cast<int>(exit), exit_text.empty() ? "" : " - " + exit_text);
}

// "" when there is nothing to say about the placement.
std::string placement_line(const Placement& placement, bool earlier) {
  if (const std::string p = placement_text(placement); !p.empty())
    return (earlier ? "  placement (before the repair the run ended in): " : "  placement: ") + p;
  if (earlier) return "  placement: not known (the run ended in a repair before any rank had stepped)";
  return "";
}

std::string recoveries_line(const std::vector<RecoveryRecord>& recoveries) {
  const auto interrupted = std::count_if(recoveries.begin(), recoveries.end(),
                                         [](const RecoveryRecord& r) { return r.interrupted; });
  const auto stopped =
      std::count_if(recoveries.begin(), recoveries.end(), [](const RecoveryRecord& r) { return r.stopped; });
  return fmt::format("  recoveries: {}{}{}", recoveries.size(),
                     interrupted > 0 ? fmt::format(" ({} interrupted by another failure)", interrupted) : "",
                     stopped > 0 ? " (the last one stopped by policy)" : "");
}

std::string tryblocks_line(const std::vector<TryBlockRecord>& tryblocks) {
  const auto committed = std::count_if(tryblocks.begin(), tryblocks.end(), [](const TryBlockRecord& t) {
    return t.outcome == TryBlockOutcome::committed;
  });
  return fmt::format("  tryblocks: {} committed, {} aborted", committed,
                     static_cast<long>(tryblocks.size()) - committed);
}

std::string results_text(const std::map<std::string, std::string>& results) {
  std::string r;
  for (const auto& [k, v] : results) r += fmt::format("{}{}={}", r.empty() ? "" : ", ", k, v);
  return r;
}

// The history's records, read back (adopt_history).
std::vector<int> ints(const YAML::Node& n) {
  std::vector<int> v;
  for (const auto& x : n) v.push_back(x.as<int>());
  return v;
}

void read_start(const YAML::Node& start, StartRecord& into) {
  into = {enum_of<CheckpointLevel>(start, "level"),
          start["iteration"].as<std::int64_t>(),
          start["old_size"] ? start["old_size"].as<int>() : 0,
          {}};
  for (const auto& v : start["skipped"]) {
    into.skipped.push_back({enum_of<CheckpointLevel>(v, "level"), v["iteration"].as<std::int64_t>(),
                            v["why"].as<std::string>()});
  }
}

FailureRecord failure_from_yaml(const YAML::Node& f) {
  return {f["world_rank"].as<int>(), f["logical_rank"].as<int>(),         f["host"].as<std::string>(),
          f["time"].as<double>(),    f["detection_latency"].as<double>(), f["iteration"].as<std::int64_t>()};
}

RecoveryRecord recovery_from_yaml(const YAML::Node& x) {
  RecoveryRecord rec;
  rec.start = x["start"].as<double>();
  rec.action = enum_of<RecoveryAction>(x, "action");
  rec.failed_world_ranks = ints(x["failed_world_ranks"]);
  rec.failed_logical_ranks = ints(x["failed_logical_ranks"]);
  rec.rounds = x["rounds"].as<int>();
  rec.new_size = x["new_size"].as<int>();
  rec.restored_iteration = x["restored_iteration"].as<std::int64_t>();
  rec.restored_level = enum_of<CheckpointLevel>(x, "restored_level");
  rec.interrupted = x["interrupted"] && x["interrupted"].as<bool>();
  rec.stopped = x["stopped"] && x["stopped"].as<bool>();
  const YAML::Node t = x["seconds"];
  rec.detect_s = t["detect"].as<double>();
  rec.revoke_s = t["revoke"].as<double>();
  rec.shrink_s = t["shrink"].as<double>();
  rec.agree_s = t["agree"].as<double>();
  rec.rebuild_s = t["rebuild"].as<double>();
  rec.restore_s = t["restore"].as<double>();
  rec.total_s = t["total"].as<double>();
  return rec;
}

CheckpointRecord checkpoint_from_yaml(const YAML::Node& c) {
  return {c["iteration"].as<std::int64_t>(),
          c["time"].as<double>(),
          enum_of<CheckpointLevel>(c, "level"),
          c["bytes"].as<std::uint64_t>(),
          c["seconds"].as<double>(),
          c["bandwidth"].as<double>(),
          c["next_interval"] ? c["next_interval"].as<int>() : 0,
          c["expected_waste"] ? c["expected_waste"].as<double>() : 0,
          c["committed_s"] ? c["committed_s"].as<double>() : 0,
          c["background_s"] ? c["background_s"].as<double>() : 0};
}

TryBlockRecord tryblock_from_yaml(const YAML::Node& t) {
  return {t["name"].as<std::string>(), enum_of<TryBlockOutcome>(t, "outcome"), t["attempts"].as<int>(),
          t["errors"].as<std::string>(), t["iteration"] ? t["iteration"].as<std::int64_t>() : -1};
}

}  // namespace

void Report::set_config(const Config& config, int active, int spares, int world_size) {
  config_echo_ = YAML::Dump(detail::config_to_yaml(config));
  report_path_ = config.report_path;
  active_ = active;
  spares_ = spares;
  world_size_ = world_size;
  if (platform_.hostname.empty()) platform_ = detect_platform();
}

void Report::set_checkpoint_interval(int next_interval, double expected_waste) {
  if (checkpoints_.empty()) return;
  checkpoints_.back().next_interval = next_interval;
  checkpoints_.back().expected_waste = expected_waste;
}

void Report::set_checkpoint_committed(std::int64_t iteration, double committed_s, double background_s) {
  for (auto c = checkpoints_.rbegin(); c != checkpoints_.rend(); ++c) {
    if (c->iteration != iteration) continue;
    c->committed_s = committed_s;
    c->background_s = background_s;
    c->bandwidth = committed_s > 0 ? static_cast<double>(c->bytes) / committed_s : 0;
    return;
  }
}

void Report::set_placement(Placement p) {
  const bool complete = std::all_of(p.ranks.begin(), p.ranks.end(),
                                    [](const RankPlacement& r) { return r.logical >= 0 && !r.host.empty(); });
  placement_earlier_ = !complete;
  if (complete) placement_ = std::move(p);
}

void Report::set_phase_time(const std::string& phase, double seconds) { phases_[phase] = seconds; }
void Report::set_real_result(const std::string& key, double value) {
  results_[key] = fmt::format("{}", value);
}

void Report::set_exit(ExitCode code, std::string text) {
  exit_ = code;
  exit_text_ = std::move(text);
}

std::string Report::to_yaml() const {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "fx_report" << YAML::Value << kSchemaVersion;
  out << YAML::Key << "app" << YAML::Value << app_;
  out << YAML::Key << "exit" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "code" << YAML::Value << static_cast<int>(exit_);
  out << YAML::Key << "status" << YAML::Value << std::string(to_string(exit_));
  out << YAML::Key << "text" << YAML::Value << exit_text_;
  out << YAML::EndMap;
  emit_platform(out, platform_, active_, spares_, world_size_);
  if (!placement_.ranks.empty()) emit_placement(out, placement_, placement_earlier_);

  out << YAML::Key << "phases" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : phases_) out << YAML::Key << k << YAML::Value << num(v);
  out << YAML::EndMap;
  emit_start(out, start_);
  emit_list(out, "failures", failures_);
  emit_list(out, "recoveries", recoveries_);
  out << YAML::Key << "restarts_from_scratch" << YAML::Value << restarts_from_scratch_;
  emit_list(out, "checkpoints", checkpoints_);
  emit_list(out, "tryblocks", tryblocks_);
  if (!unfired_.empty()) {
    out << YAML::Key << "inject" << YAML::Value << YAML::BeginMap;
    emit_list(out, "unfired", unfired_);
    out << YAML::EndMap;
  }

  // [time, iteration] pairs, one per line: the plot's progress curve.
  out << YAML::Key << "progress" << YAML::Value << YAML::BeginSeq;
  for (const auto& [t, it] : progress_) out << YAML::Flow << YAML::BeginSeq << num(t) << it << YAML::EndSeq;
  out << YAML::EndSeq;

  out << YAML::Key << "results" << YAML::Value << YAML::BeginMap;
  for (const auto& [k, v] : results_) out << YAML::Key << k << YAML::Value << v;
  out << YAML::EndMap;

  out << YAML::Key << "config" << YAML::Value;
  if (config_echo_.empty())
    out << YAML::Flow << YAML::BeginMap << YAML::EndMap;
  else
    out << YAML::Load(config_echo_);
  out << YAML::EndMap;
  if (!out.good()) FX_THROW(Error, fmt::format("run report: YAML emitter error: {}", out.GetLastError()));
  return std::string(out.c_str()) + "\n";
}

void Report::adopt_history(const std::string& yaml) {
  const YAML::Node r = YAML::Load(yaml);
  phases_.clear();
  for (const auto& kv : r["phases"]) phases_[kv.first.as<std::string>()] = kv.second.as<double>();
  read_start(r["start"], start_);
  failures_.clear();
  for (const auto& f : r["failures"]) failures_.push_back(failure_from_yaml(f));
  recoveries_.clear();
  for (const auto& x : r["recoveries"]) recoveries_.push_back(recovery_from_yaml(x));
  checkpoints_.clear();
  for (const auto& c : r["checkpoints"]) checkpoints_.push_back(checkpoint_from_yaml(c));
  tryblocks_.clear();
  for (const auto& t : r["tryblocks"]) tryblocks_.push_back(tryblock_from_yaml(t));
  restarts_from_scratch_ = r["restarts_from_scratch"].as<int>();
  progress_.clear();
  for (const auto& p : r["progress"]) progress_.emplace_back(p[0].as<double>(), p[1].as<std::int64_t>());
}

void Report::write(const std::string& path) const {
  const std::string text = to_yaml();
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent, ec);  // a failure shows at the write
  // Aside and renamed: a reader never sees half a report, and a device
  // node or link in its place is refused, never replaced.
  const std::string why = detail::write_replacing(path, text, 0644);
  if (!why.empty()) FX_THROW(Error, fmt::format("cannot write the run report to '{}': {}", path, why));
}

std::string Report::summary() const {
  std::string s;
  auto line = [&](const std::string& l) { s += l + "\n"; };
  line(headline(app_, active_, spares_, platform_.hostname, exit_, exit_text_));
  if (!phases_.empty()) line("  time: " + phases_text(phases_));
  if (const std::string p = placement_line(placement_, placement_earlier_); !p.empty()) line(p);
  if (const std::string l = start_line(start_); !l.empty()) line(l);
  line(fmt::format("  failures: {}", failures_.size()));
  for (const auto& f : failures_) line(failure_line(f));
  line(recoveries_line(recoveries_));
  if (restarts_from_scratch_ > 0) {
    line(fmt::format("  restarted from iteration 0 {} time(s): a checkpoint was lost",
                     restarts_from_scratch_));
  }
  for (std::size_t i = 0; i < recoveries_.size(); ++i) line(recovery_line(i + 1, recoveries_[i]));
  for (const auto& l : checkpoint_lines(checkpoints_)) line(l);
  if (!tryblocks_.empty()) line(tryblocks_line(tryblocks_));
  if (!results_.empty()) line("  results: " + results_text(results_));
  if (!report_path_.empty()) line((unwritten_ ? "  report: NOT WRITTEN to " : "  report: ") + report_path_);
  return s;
}

}  // namespace fx
