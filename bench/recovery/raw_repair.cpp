// The reference the recovery and scaling benchmarks measure fx against: a
// raw ULFM repair loop with nothing else. Workers run an allreduce loop with
// 1 ms steps (--iters in all, as fx_repair); spares block in a receive on
// the world. At iteration --kill-at, each logical rank of --victims (a comma
// list; --victim for one) stamps the time and raises SIGKILL; the others
// revoke, shrink, exchange logical ranks and split so spares take the dead
// ranks' places; the next allreduce completing is "resumed". Every active
// rank stamps its resume against the newest kill stamp, and the new logical
// rank 0 prints the maximum over them, with its own breakdown, as one YAML
// line at the end: kill_to_resume_ms, ...
#include <fx/clock.hpp>
#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx_bench/results.hpp>

#include <mpi.h>
#include <signal.h>
#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<int> parse_list(const std::string& text) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) out.push_back(std::atoi(item.c_str()));
  return out;
}

std::string stamp_path(int logical) {
  const char* base = std::getenv("FX_STATUS_FILE");
  return std::string(base ? base : "/tmp/fx") + ".rawkill." + std::to_string(logical);
}

// The newest kill stamp among the victims.
double newest_kill(const std::vector<int>& victims) {
  double t = 0;
  for (int v : victims) {
    double tk = 0;
    if (FILE* f = std::fopen(stamp_path(v).c_str(), "r")) {
      if (std::fscanf(f, "%lf", &tk) == 1) t = std::max(t, tk);
      std::fclose(f);
    }
  }
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  fx::detail::mark_started(world_rank);  // the launcher's start-up watch: a kill later is no start-up loss
  int spares = std::atoi(std::getenv("FX_SPARES") ? std::getenv("FX_SPARES") : "1");
  int kill_at = 50, iters = 100;
  std::vector<int> victims{1};
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--kill-at") kill_at = std::atoi(argv[i + 1]);
    if (a == "--victim" || a == "--victims") victims = parse_list(argv[i + 1]);
    if (a == "--iters") iters = std::atoi(argv[i + 1]);
  }
  MPI_Comm world;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int wr = 0, ws = 0;
  MPI_Comm_rank(world, &wr);
  MPI_Comm_size(world, &ws);
  const int n = ws - spares;
  int logical = wr < n ? wr : -1;
  MPI_Comm app = MPI_COMM_NULL;
  MPI_Comm_split(world, logical >= 0 ? 0 : MPI_UNDEFINED, logical, &app);
  const timespec step{0, 1000000};
  double t_detect = 0, t_shrink = 0, t_split = 0, t_kill = 0, t_resume = 0;
  double shrink_ms = 0, rebuild_ms = 0;
  bool repaired = false;
  for (int it = 0; it < iters;) {
    int rc = MPI_SUCCESS;
    if (logical < 0) {
      int msg = 0;
      rc = MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, 1, world, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) break;  // released
    } else {
      const bool victim = std::find(victims.begin(), victims.end(), logical) != victims.end();
      if (it == kill_at && victim && !repaired) {
        if (FILE* f = std::fopen(stamp_path(logical).c_str(), "w")) {
          std::fprintf(f, "%.9f\n", fx::now());
          std::fclose(f);
        }
        raise(SIGKILL);
      }
      int v = 1;
      rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, app);
      if (rc == MPI_SUCCESS) {
        if (repaired && t_split > 0) {
          t_resume = fx::now();  // against the kill stamp at the end, as fx_repair
          t_split = 0;
        }
        nanosleep(&step, nullptr);
        ++it;
        continue;
      }
    }
    // Repair: revoke, shrink, exchange logical ranks, split.
    t_detect = fx::now();
    if (app != MPI_COMM_NULL) fx::ulfm::revoke(app);
    fx::ulfm::revoke(world);
    MPI_Comm shrunk;
    fx::ulfm::shrink(world, &shrunk);
    t_shrink = fx::now();
    int sn = 0, sr = 0;
    MPI_Comm_size(shrunk, &sn);
    MPI_Comm_rank(shrunk, &sr);
    std::vector<int> logicals(static_cast<std::size_t>(sn));
    MPI_Allgather(&logical, 1, MPI_INT, logicals.data(), 1, MPI_INT, shrunk);
    std::vector<bool> held(static_cast<std::size_t>(n), false);
    for (int l : logicals)
      if (l >= 0) held[static_cast<std::size_t>(l)] = true;
    int hole = 0;
    for (int s = 0; s < sn; ++s) {
      if (logicals[static_cast<std::size_t>(s)] >= 0) continue;
      while (hole < n && held[static_cast<std::size_t>(hole)]) ++hole;
      if (hole < n) {
        if (s == sr) logical = hole;
        held[static_cast<std::size_t>(hole)] = true;
      }
    }
    MPI_Comm_set_errhandler(shrunk, MPI_ERRORS_RETURN);
    MPI_Comm newapp = MPI_COMM_NULL;
    MPI_Comm_split(shrunk, logical >= 0 ? 0 : MPI_UNDEFINED, logical, &newapp);
    t_split = fx::now();
    shrink_ms = (t_shrink - t_detect) * 1e3;
    rebuild_ms = (t_split - t_shrink) * 1e3;
    world = shrunk;
    app = newapp;
    if (app != MPI_COMM_NULL) {
      MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
      MPI_Allreduce(MPI_IN_PLACE, &it, 1, MPI_INT, MPI_MAX, app);  // the spare learns where we are
    }
    repaired = true;
  }
  if (repaired && app != MPI_COMM_NULL) {
    t_kill = newest_kill(victims);
    const double resume_ms = t_resume > 0 ? (t_resume - t_kill) * 1e3 : -1;
    double slowest = resume_ms;
    MPI_Allreduce(&resume_ms, &slowest, 1, MPI_DOUBLE, MPI_MAX, app);
    if (logical == 0) {
      fx_bench::Line("raw_repair")
          .add("kill_to_resume_ms", slowest)
          .add("detect_ms", (t_detect - t_kill) * 1e3)
          .add("shrink_ms", shrink_ms)
          .add("rebuild_ms", rebuild_ms)
          .print();
    }
  }
  // Release the spares still waiting, then leave without MPI_Finalize.
  if (logical == 0) {
    int ws2 = 0;
    MPI_Comm_size(world, &ws2);
    MPI_Group wg, ag;
    MPI_Comm_group(world, &wg);
    MPI_Comm_group(app, &ag);
    for (int r = 0; r < ws2; ++r) {
      int t = 0;
      MPI_Group_translate_ranks(wg, 1, &r, ag, &t);
      int one = 1;
      if (t == MPI_UNDEFINED) MPI_Send(&one, 1, MPI_INT, r, 1, world);
    }
    fx::detail::write_status(fx::ExitCode::ok, "raw repair done");
  }
  fx::detail::shutdown(world, repaired, 0);
  return 0;
}
