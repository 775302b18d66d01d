// The reference the recovery benchmark measures fx against: a raw ULFM
// repair loop with nothing else. Workers run an allreduce loop with 1 ms
// steps; spares block in a receive on the world. At iteration --kill-at,
// logical rank --victim stamps the time and raises SIGKILL; the others
// revoke, shrink, exchange logical ranks and split so a spare takes the dead
// rank's place; the next allreduce completing is "resumed".
// Prints one YAML line from the new logical rank 0: kill_to_resume_ms, ...
#include <fx/clock.hpp>
#include <fx/detail/status.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx_bench/results.hpp>

#include <mpi.h>
#include <signal.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int spares = std::atoi(std::getenv("FX_SPARES") ? std::getenv("FX_SPARES") : "1");
  int kill_at = 50, victim = 1, iters = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string a = argv[i];
    if (a == "--kill-at") kill_at = std::atoi(argv[i + 1]);
    if (a == "--victim") victim = std::atoi(argv[i + 1]);
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
  const std::string stamp =
      std::string(std::getenv("FX_STATUS_FILE") ? std::getenv("FX_STATUS_FILE") : "/tmp/fx") + ".rawkill";
  const timespec step{0, 1000000};
  double t_detect = 0, t_shrink = 0, t_split = 0;
  bool repaired = false;
  for (int it = 0; it < iters;) {
    int rc = MPI_SUCCESS;
    if (logical < 0) {
      int msg = 0;
      rc = MPI_Recv(&msg, 1, MPI_INT, MPI_ANY_SOURCE, 1, world, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) break;  // released
    } else {
      if (it == kill_at && logical == victim && !repaired) {
        if (FILE* f = std::fopen(stamp.c_str(), "w")) {
          std::fprintf(f, "%.9f\n", fx::now());
          std::fclose(f);
        }
        raise(SIGKILL);
      }
      int v = 1;
      rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_SUM, app);
      if (rc == MPI_SUCCESS) {
        if (repaired && t_split > 0) {
          const double t_resume = fx::now();
          double t_kill = 0;
          if (FILE* f = std::fopen(stamp.c_str(), "r")) {
            if (std::fscanf(f, "%lf", &t_kill) != 1) t_kill = 0;
            std::fclose(f);
          }
          if (logical == 0) {
            fx_bench::Line("raw_repair")
                .add("kill_to_resume_ms", (t_resume - t_kill) * 1e3)
                .add("detect_ms", (t_detect - t_kill) * 1e3)
                .add("shrink_ms", (t_shrink - t_detect) * 1e3)
                .add("rebuild_ms", (t_split - t_shrink) * 1e3)
                .print();
          }
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
    world = shrunk;
    app = newapp;
    if (app != MPI_COMM_NULL) {
      MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
      MPI_Allreduce(MPI_IN_PLACE, &it, 1, MPI_INT, MPI_MAX, app);  // the spare learns where we are
    }
    repaired = true;
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
