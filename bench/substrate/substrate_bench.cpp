// Substrate benchmark and demo: raw ULFM on this machine.
//
//   fx run -n N -s S substrate_bench [--demo] [--calm-reps R] [--iterations I]
//        [--kill-iteration K] [--victim W] [--step-ms MS] [--finalize fx|mpi]
//   fx run -n N substrate_bench --probe SECONDS [--compute-ms MS]
//
// One launch kills one rank in an allreduce loop and repairs with a spare
// (see tests/mpi/substrate/kit). Measures failure-free revoke/shrink/agree
// on the N active ranks (median of R), then detection latency (kill ->
// first error at each survivor and spare) and shrink/agree/split times of
// the repair. Under scripts/bench.sh (FX_BENCH_DIR, FX_BENCH_RUN,
// FX_BENCH_RUNS) each run appends a line to substrate.raw/<N>p<S>.txt and
// the last run of a configuration rewrites substrate.yaml from all of them.
// --probe: no kill, compute bursts without MPI calls between allreduces, to
// catch false suspicions of the heartbeat detector.
// --finalize mpi: end with plain MPI_Finalize to observe open-mpi/ompi#11404.
// FX_SUBSTRATE_EXIT_CODE: the processes' own exit status (default 0; the
// verdict is in FX_STATUS_FILE), to observe the mpiexec deadlock it causes.
#include <fx/clock.hpp>
#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx_bench/results.hpp>
#include <mpi.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "substrate_kit.hpp"

namespace {

using fx::substrate::Stats;
using fx::substrate::summarize;

struct Options {
  bool demo = false;
  int calm_reps = 5;
  int iterations = 100;
  int kill_iteration = 30;
  int victim = -1;  // default: the last active rank
  double step_ms = 1.0;
  bool mpi_finalize = false;
  double probe_s = 0;
  double compute_ms = 50;
};

[[noreturn]] void usage_error(const std::string& what) {
  std::fprintf(stderr, "substrate_bench: %s\n", what.c_str());
  fx::detail::write_status(fx::ExitCode::usage, what);
  MPI_Abort(MPI_COMM_WORLD, 2);
  std::exit(2);
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " expects a value");
      return argv[++i];
    };
    if (a == "--demo")
      o.demo = true;
    else if (a == "--calm-reps")
      o.calm_reps = std::stoi(value());
    else if (a == "--iterations")
      o.iterations = std::stoi(value());
    else if (a == "--kill-iteration")
      o.kill_iteration = std::stoi(value());
    else if (a == "--victim")
      o.victim = std::stoi(value());
    else if (a == "--step-ms")
      o.step_ms = std::stod(value());
    else if (a == "--probe")
      o.probe_s = std::stod(value());
    else if (a == "--compute-ms")
      o.compute_ms = std::stod(value());
    else if (a == "--finalize") {
      const std::string v = value();
      if (v != "fx" && v != "mpi") usage_error("--finalize expects fx or mpi, got '" + v + "'");
      o.mpi_finalize = v == "mpi";
    } else
      usage_error("unknown argument '" + a + "'");
  }
  return o;
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

std::string join(const std::vector<double>& v) {
  std::string s;
  for (double x : v) {
    if (!s.empty()) s += ',';
    s += std::to_string(x);
  }
  return s.empty() ? "-" : s;
}

std::vector<double> split_doubles(const std::string& s) {
  std::vector<double> v;
  if (s == "-") return v;
  std::stringstream in(s);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(std::stod(item));
  return v;
}

void emit_stats(YAML::Emitter& y, const char* key, const Stats& s) {
  y << YAML::Key << key << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "median" << YAML::Value << s.median << YAML::Key << "min" << YAML::Value << s.min;
  y << YAML::Key << "max" << YAML::Value << s.max << YAML::Key << "samples" << YAML::Value << s.n;
  y << YAML::EndMap;
}

// A detector setting: its number, or the word (off) quoted so no parser
// reads it as a boolean.
void emit_setting(YAML::Emitter& y, const std::string& v) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (!v.empty() && end && *end == '\0')
    y << x;
  else
    y << YAML::DoubleQuoted << v;
}

// Rewrite <dir>/substrate.yaml from every <dir>/substrate.raw/*.txt.
void write_summary(const std::string& dir) {
  const std::string raw_dir = dir + "/substrate.raw";
  std::vector<std::string> files;
  if (DIR* d = opendir(raw_dir.c_str())) {
    while (dirent* e = readdir(d)) {
      const std::string n = e->d_name;
      if (n.size() > 4 && n.substr(n.size() - 4) == ".txt") files.push_back(n);
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end(), [](const std::string& a, const std::string& b) {
    return std::atoi(a.c_str()) < std::atoi(b.c_str());
  });
  const std::string out = dir + "/substrate.yaml";
  fx_bench::Results res(
      "Raw ULFM on this machine (bench/substrate, scripts/bench.sh). Times in ms.\n"
      "detection: SIGKILL -> first MPIX error at each surviving active rank, pooled over runs;\n"
      "spare_wake: the same at idle spares blocked in MPI_Recv; calm_*: failure-free, N ranks;\n"
      "repair_*: in the repair after the kill (world of N+S-1); *_ms = last in -> last out.");
  YAML::Emitter& y = res.yaml();
  y << YAML::BeginMap << YAML::Key << "benchmark" << YAML::Value << "substrate";
  y << YAML::Key << "configurations" << YAML::Value << YAML::BeginSeq;
  for (const auto& file : files) {
    std::ifstream in(raw_dir + '/' + file);
    std::map<std::string, std::vector<double>> pooled;
    std::map<std::string, std::string> meta;
    std::string line;
    int runs = 0;
    while (std::getline(in, line)) {
      std::stringstream words(line);
      std::string kv;
      ++runs;
      while (words >> kv) {
        const auto eq = kv.find('=');
        if (eq == std::string::npos) continue;
        const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
        if (k == "np" || k == "spares" || k == "detector_period" || k == "detector_timeout" || k == "host") {
          meta[k] = v;
        } else {
          for (double x : split_doubles(v)) pooled[k].push_back(x);
        }
      }
    }
    const int active = std::atoi(meta["np"].c_str()), spares = std::atoi(meta["spares"].c_str());
    y << YAML::BeginMap;
    y << YAML::Key << "active" << YAML::Value << active << YAML::Key << "spares" << YAML::Value << spares;
    y << YAML::Key << "processes" << YAML::Value << active + spares;
    y << YAML::Key << "runs" << YAML::Value << runs;
    y << YAML::Key << "detector" << YAML::Value << YAML::Flow << YAML::BeginMap;
    y << YAML::Key << "period_s" << YAML::Value;
    emit_setting(y, meta["detector_period"]);
    y << YAML::Key << "timeout_s" << YAML::Value;
    emit_setting(y, meta["detector_timeout"]);
    y << YAML::EndMap;
    for (const char* k : {"detection", "spare_wake", "calm_revoke", "calm_shrink", "calm_agree",
                          "repair_shrink", "repair_agree", "repair_split", "kill_to_resume"}) {
      emit_stats(y, k, summarize(pooled[k]));
    }
    y << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::EndMap;
  try {
    res.write(out);
    std::printf("[bench] wrote %s\n", out.c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "substrate_bench: %s\n", e.what());
  }
}

// Compute without MPI calls for about ms milliseconds of wall time.
double spin(double ms) {
  const double until = fx::now() + ms / 1e3;
  double x = 0;
  while (fx::now() < until) {
    for (int i = 0; i < 1000; ++i) x += std::sqrt(static_cast<double>(i) + x);
  }
  return x;
}

int probe(const Options& o) {
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  const double t0 = fx::now();
  int steps = 0, rc = MPI_SUCCESS;
  double sink = 0;
  for (;;) {
    sink += spin(o.compute_ms);
    int go = fx::now() - t0 < o.probe_s ? 1 : 0;
    rc = MPI_Allreduce(MPI_IN_PLACE, &go, 1, MPI_INT, MPI_MIN, comm);
    if (rc != MPI_SUCCESS || !go) break;
    ++steps;
  }
  if (rc != MPI_SUCCESS) {
    std::vector<int> failed;
    fx::ulfm::get_failed(comm, failed);
    std::printf("[probe] rank %d: FALSE POSITIVE after %.1f s: %s, failed ranks:", rank, fx::now() - t0,
                fx::ulfm::error_name(rc).c_str());
    for (int r : failed) std::printf(" %d", r);
    std::printf("\n");
    std::fflush(stdout);
    fx::detail::write_status(fx::ExitCode::error, "false positive failure");
    fx::ulfm::revoke(comm);
    MPI_Comm live = MPI_COMM_NULL;
    fx::ulfm::shrink(comm, &live);
    fx::detail::shutdown(live, true, 1);
  }
  if (rank == 0) {
    std::printf(
        "[probe] %d processes, %d steps of %.0f ms compute without MPI calls in %.1f s: no failure "
        "reported (detector period %s s, timeout %s s) %g\n",
        size, steps, o.compute_ms, fx::now() - t0, env_or("FX_DETECTOR_PERIOD", "off").c_str(),
        env_or("FX_DETECTOR_TIMEOUT", "-").c_str(), sink > 0 ? 0.0 : 1.0);
    fx::detail::write_status(fx::ExitCode::ok, "no false positive");
  }
  fx::detail::shutdown(comm, false, 0);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  const Options o = parse(argc, argv);
  if (!fx::ulfm::active()) usage_error("ULFM is not active: launch through scripts/launch.sh (fx run)");
  if (o.probe_s > 0) return probe(o);

  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  const int spares = fx::substrate::env_spares();
  const int n = size - spares;
  if (spares < 1 || n < 2) usage_error("needs at least 2 active ranks and 1 spare (fx run -n N -s S)");
  const int me = fx::substrate::world_rank();

  // Failure-free costs on the active ranks.
  std::vector<double> c_rev, c_shr, c_agr;
  MPI_Comm act = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, me < n ? 0 : MPI_UNDEFINED, me, &act);
  if (act != MPI_COMM_NULL) {
    MPI_Comm_set_errhandler(act, MPI_ERRORS_RETURN);
    for (int r = 0; r < o.calm_reps; ++r) {
      const auto c = fx::substrate::measure_calm(act);
      c_rev.push_back(c.revoke_ms);
      c_shr.push_back(c.shrink_ms);
      c_agr.push_back(c.agree_ms);
    }
    MPI_Comm_free(&act);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  fx::substrate::RepairConfig cfg;
  cfg.active = n;
  cfg.victim = o.victim >= 0 ? o.victim : n - 1;
  cfg.iterations = o.iterations;
  cfg.kill_iteration = o.kill_iteration;
  cfg.step_ms = o.step_ms;
  cfg.verbose = o.demo;
  cfg.progress_every = o.demo ? 10 : 0;
  if (cfg.victim <= 0 || cfg.victim >= size)
    usage_error("--victim must be a world rank in 1.." + std::to_string(size - 1));
  const auto rep = fx::substrate::run_repair(cfg);

  if (rep.reporter) {
    const Stats d = summarize(rep.detect_ms), w = summarize(rep.spare_wake_ms);
    const Stats cr = summarize(c_rev), cs = summarize(c_shr), ca = summarize(c_agr);
    std::printf("[%s] %d active + %d spares; world rank %d killed at iteration %d%s\n",
                o.demo ? "demo" : "bench", n, spares, cfg.victim, cfg.kill_iteration,
                rep.ok ? "" : " -- CHECK FAILED");
    std::printf(
        "[%s]   detection (kill -> first error): survivors median %.1f ms (min %.1f, max %.1f), idle "
        "spares %.1f-%.1f ms\n",
        o.demo ? "demo" : "bench", d.median, d.min, d.max, w.min, w.max);
    std::printf("[%s]   repair: shrink %.2f ms, agree %.2f ms, split %.2f ms; kill -> loop resumed %.1f ms\n",
                o.demo ? "demo" : "bench", rep.shrink_ms, rep.agree_ms, rep.split_ms, rep.repair_ms);
    std::printf(
        "[%s]   failure-free on %d ranks (median of %d): revoke %.2f ms, shrink %.2f ms, agree %.2f ms\n",
        o.demo ? "demo" : "bench", n, o.calm_reps, cr.median, cs.median, ca.median);
    if (!rep.ok) std::printf("[%s] problem: %s\n", o.demo ? "demo" : "bench", rep.problem.c_str());
    std::fflush(stdout);

    const std::string dir = env_or("FX_BENCH_DIR", "");
    if (!dir.empty() && rep.ok) {
      const std::string raw_dir = dir + "/substrate.raw";
      mkdir(dir.c_str(), 0755);
      mkdir(raw_dir.c_str(), 0755);
      const std::string raw = raw_dir + "/" + std::to_string(n) + "p" + std::to_string(spares) + ".txt";
      const int run = std::atoi(env_or("FX_BENCH_RUN", "1").c_str());
      const int runs = std::atoi(env_or("FX_BENCH_RUNS", "1").c_str());
      if (std::FILE* f = std::fopen(raw.c_str(), run <= 1 ? "w" : "a")) {
        std::fprintf(f,
                     "np=%d spares=%d detector_period=%s detector_timeout=%s detection=%s spare_wake=%s "
                     "calm_revoke=%s calm_shrink=%s calm_agree=%s repair_shrink=%.4f repair_agree=%.4f "
                     "repair_split=%.4f kill_to_resume=%.4f\n",
                     n, spares, env_or("FX_DETECTOR_PERIOD", "off").c_str(),
                     env_or("FX_DETECTOR_TIMEOUT", "off").c_str(), join(rep.detect_ms).c_str(),
                     join(rep.spare_wake_ms).c_str(), join({cr.median}).c_str(), join({cs.median}).c_str(),
                     join({ca.median}).c_str(), rep.shrink_ms, rep.agree_ms, rep.split_ms, rep.repair_ms);
        std::fclose(f);
      }
      if (run >= runs) write_summary(dir);
    }
    fx::detail::write_status(rep.ok ? fx::ExitCode::survived : fx::ExitCode::error,
                             rep.ok ? "survived a killed rank" : rep.problem);
  }
  if (o.mpi_finalize) {
    // The plain ending, to observe open-mpi/ompi#11404 (may hang).
    MPI_Finalize();
    return 0;
  }
  // The verdict is in FX_STATUS_FILE; every process exits 0, because PRRTE's
  // mpiexec deadlocked in about 1 run in 5 at 8+2 when processes left after
  // a failure with a non-zero status (0 in 20 with status 0).
  const int exit_code =
      std::getenv("FX_SUBSTRATE_EXIT_CODE") ? std::atoi(std::getenv("FX_SUBSTRATE_EXIT_CODE")) : 0;
  fx::detail::shutdown(rep.live, rep.failures_seen > 0, exit_code);
  return exit_code;
}
