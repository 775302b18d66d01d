#include "substrate_kit.hpp"

#include <fx/clock.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>

namespace fx::substrate {
namespace {

constexpr int kTagRelease = 4242;

std::string stamp_path(const std::string& dir, int rank) { return dir + "/kill." + std::to_string(rank); }

void sleep_ms(double ms) {
  if (ms > 0) usleep(static_cast<useconds_t>(ms * 1e3));
}

int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

// Printing for the demo: one line, flushed, so it survives the kills.
template <class... Args>
void say(bool on, const char* fmt, Args... args) {
  if (!on) return;
  std::printf(fmt, args...);
  std::fflush(stdout);
}

}  // namespace

std::string make_shared_dir(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  char path[4096] = {0};
  if (rank == 0) {
    const char* tmp = std::getenv("TMPDIR");
    std::snprintf(path, sizeof path, "%s/fx-substrate.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(path)) {
      std::fprintf(stderr, "fx substrate: mkdtemp(%s) failed: %s\n", path, std::strerror(errno));
      MPI_Abort(comm, 1);
    }
  }
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, comm);
  return path;
}

void remove_shared_dir(const std::string& dir) {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  for (int r = 0; r < size; ++r) std::remove(stamp_path(dir, r).c_str());
  rmdir(dir.c_str());
}

void die_now(const std::string& dir) {
  char text[64];
  const int len = std::snprintf(text, sizeof text, "%.9f\n", fx::now());
  const int fd = open(stamp_path(dir, world_rank()).c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) {
    if (write(fd, text, static_cast<std::size_t>(len)) != len) std::perror("fx substrate: kill stamp");
    close(fd);
  }
  std::fflush(nullptr);
  raise(SIGKILL);
  _exit(137);  // not reached
}

double kill_time(const std::string& dir, int rank, double wait_s) {
  const double give_up = fx::now() + wait_s;
  const std::string path = stamp_path(dir, rank);
  do {
    if (std::FILE* f = std::fopen(path.c_str(), "r")) {
      double t = std::numeric_limits<double>::quiet_NaN();
      const int got = std::fscanf(f, "%lf", &t);
      std::fclose(f);
      if (got == 1) return t;
    }
    sleep_ms(2);
  } while (fx::now() < give_up);
  return std::numeric_limits<double>::quiet_NaN();
}

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int env_spares() {
  const char* s = std::getenv("FX_SPARES");
  return s && *s ? std::atoi(s) : 0;
}

Stats summarize(std::vector<double> v) {
  Stats s;
  v.erase(std::remove_if(v.begin(), v.end(), [](double x) { return std::isnan(x); }), v.end());
  s.n = v.size();
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  s.median = v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
  s.min = v.front();
  s.max = v.back();
  return s;
}

double collective_ms(MPI_Comm comm, double t_in, double t_out) {
  double t[2] = {t_in, t_out};
  MPI_Allreduce(MPI_IN_PLACE, t, 2, MPI_DOUBLE, MPI_MAX, comm);
  return 1e3 * (t[1] - t[0]);
}

CalmCosts measure_calm(MPI_Comm comm) {
  CalmCosts c;
  int rank = 0, size = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);

  // Revoke: everyone else is blocked in a receive from a live rank 0.
  MPI_Comm d = MPI_COMM_NULL;
  MPI_Comm_dup(comm, &d);
  MPI_Comm_set_errhandler(d, MPI_ERRORS_RETURN);
  MPI_Barrier(comm);
  double t = 0;
  if (rank == 0) {
    sleep_ms(20);  // let the others block first
    t = fx::now();
    ulfm::revoke(d);
  } else {
    int x = 0;
    MPI_Recv(&x, 1, MPI_INT, 0, 1, d, MPI_STATUS_IGNORE);
    t = fx::now();
  }
  double t_rev = rank == 0 ? t : 0, t_last = rank == 0 ? 0 : t;
  MPI_Allreduce(MPI_IN_PLACE, &t_rev, 1, MPI_DOUBLE, MPI_MAX, comm);
  MPI_Allreduce(MPI_IN_PLACE, &t_last, 1, MPI_DOUBLE, MPI_MAX, comm);
  c.revoke_ms = size > 1 ? 1e3 * (t_last - t_rev) : 0;
  MPI_Comm_free(&d);

  MPI_Comm_dup(comm, &d);
  MPI_Barrier(comm);
  MPI_Comm s = MPI_COMM_NULL;
  const double t_in = fx::now();
  ulfm::shrink(d, &s);
  c.shrink_ms = collective_ms(comm, t_in, fx::now());
  MPI_Comm_free(&s);
  MPI_Comm_free(&d);

  MPI_Barrier(comm);
  int flag = 1;
  const double a_in = fx::now();
  ulfm::agree(comm, &flag);
  c.agree_ms = collective_ms(comm, a_in, fx::now());
  return c;
}

RepairReport run_repair(const RepairConfig& cfg) {
  RepairReport rep;
  MPI_Comm world = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &world);
  MPI_Comm_set_errhandler(world, MPI_ERRORS_RETURN);
  int wsize = 0;
  MPI_Comm_size(world, &wsize);
  const int me = world_rank();
  const int n = cfg.active;
  const std::string dir = make_shared_dir(world);

  // Logical rank of every original world rank: -1 spare, -2 dead.
  std::vector<int> logical_of(static_cast<std::size_t>(wsize));
  for (int r = 0; r < wsize; ++r) logical_of[static_cast<std::size_t>(r)] = r < n ? r : -1;
  std::vector<int> orig_of(static_cast<std::size_t>(wsize));  // current world rank -> original
  std::iota(orig_of.begin(), orig_of.end(), 0);
  auto logical = [&] { return logical_of[static_cast<std::size_t>(me)]; };
  const bool narrate = cfg.verbose;
  auto fail = [&](std::string what) {
    if (rep.ok) rep.problem = std::move(what);
    rep.ok = false;
  };

  MPI_Comm app = MPI_COMM_NULL;
  MPI_Comm_split(world, logical() >= 0 ? 0 : MPI_UNDEFINED, logical(), &app);
  if (app != MPI_COMM_NULL) MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
  say(narrate && me == 0,
      "[demo] %d active ranks + %d spares; world rank %d will be killed at iteration %d\n", n, wsize - n,
      cfg.victim, cfg.kill_iteration);

  // This process's record of the first repair (the one after the kill).
  enum {
    kDetect,
    kErr,
    kWasActive,
    kShrinkIn,
    kShrinkOut,
    kAgreeIn,
    kAgreeOut,
    kSplitIn,
    kSplitOut,
    kResume,
    kFields
  };
  std::vector<double> rec(kFields, std::numeric_limits<double>::quiet_NaN());
  int repairs = 0;
  int next_it = 0;  // first step not yet completed
  const long long nn = n;

  for (;;) {
    int rc = MPI_SUCCESS;
    bool was_active = logical() >= 0;
    if (was_active) {
      for (; next_it < cfg.iterations; ++next_it) {
        if (me == cfg.victim && next_it == cfg.kill_iteration && repairs == 0) die_now(dir);
        long long v = logical() + next_it;
        rc = MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_LONG_LONG, MPI_SUM, app);
        if (rc != MPI_SUCCESS) break;
        if (v != nn * (nn - 1) / 2 + nn * next_it) {
          fail("allreduce sum wrong at iteration " + std::to_string(next_it));
        }
        if (cfg.progress_every > 0 && next_it % cfg.progress_every == 0) {
          say(narrate && logical() == 0,
              "[demo] iteration %3d: allreduce over %d logical ranks = %lld (correct)\n", next_it, n, v);
        }
        sleep_ms(cfg.step_ms);
      }
      if (rc == MPI_SUCCESS) {
        // Done: logical 0 releases the idle spares.
        if (logical() == 0) {
          for (int r = 0; r < static_cast<int>(orig_of.size()); ++r) {
            if (logical_of[static_cast<std::size_t>(orig_of[static_cast<std::size_t>(r)])] == -1) {
              int bye = 0;
              MPI_Send(&bye, 1, MPI_INT, r, kTagRelease, world);
            }
          }
        }
        break;
      }
    } else {
      int bye = 0;
      rc = MPI_Recv(&bye, 1, MPI_INT, MPI_ANY_SOURCE, kTagRelease, world, MPI_STATUS_IGNORE);
      if (rc == MPI_SUCCESS) break;  // released
    }
    const double t_detect = fx::now();
    if (!ulfm::is_failure(rc)) {
      fail("unexpected error " + ulfm::error_name(rc));
      break;
    }
    if (repairs == 0) {
      rec[kDetect] = t_detect;
      rec[kErr] = error_class(rc);
      rec[kWasActive] = was_active ? 1 : 0;
    }
    say(narrate && me == 0, "[demo] world rank 0: %s returned %s at iteration %d\n",
        was_active ? "MPI_Allreduce" : "MPI_Recv", ulfm::error_name(rc).c_str(), next_it);

    // Repair: wake everyone, shrink, agree, recruit spares, split, resume.
    // A new failure at any point starts the round again.
    bool repaired = false;
    while (!repaired) {
      if (app != MPI_COMM_NULL) ulfm::revoke(app);
      ulfm::revoke(world);
      MPI_Comm nw = MPI_COMM_NULL;
      const double sh_in = fx::now();
      if (int src = ulfm::shrink(world, &nw); src != MPI_SUCCESS) {
        fail("MPIX_Comm_shrink: " + ulfm::error_name(src));
        break;
      }
      const double sh_out = fx::now();
      MPI_Comm_set_errhandler(nw, MPI_ERRORS_RETURN);
      int flag = 1;
      const double ag_in = fx::now();
      const int arc = ulfm::agree(nw, &flag);
      const double ag_out = fx::now();
      // Failed original ranks, from the group difference (the same everywhere).
      for (int r : ulfm::missing_ranks(world, nw)) {
        const int orig = orig_of[static_cast<std::size_t>(r)];
        rep.failed.push_back(orig);
        const int lost = logical_of[static_cast<std::size_t>(orig)];
        logical_of[static_cast<std::size_t>(orig)] = -2;
        if (lost < 0) continue;  // a spare died: nothing to replace
        int nw_size = 0;
        MPI_Comm_size(nw, &nw_size);
        std::vector<int> idx(static_cast<std::size_t>(nw_size));
        std::iota(idx.begin(), idx.end(), 0);
        int chosen = -1;
        for (int w : ulfm::translate(nw, idx, world)) {
          const int o = orig_of[static_cast<std::size_t>(w)];
          if (logical_of[static_cast<std::size_t>(o)] == -1) {
            chosen = o;
            break;
          }
        }
        if (chosen < 0) {
          fail("no spare left to replace logical rank " + std::to_string(lost));
          continue;
        }
        logical_of[static_cast<std::size_t>(chosen)] = lost;
        say(narrate && me == 0, "[demo] world rank %d died; spare world rank %d takes logical rank %d\n",
            orig, chosen, lost);
      }
      {
        int nw_size = 0;
        MPI_Comm_size(nw, &nw_size);
        std::vector<int> idx(static_cast<std::size_t>(nw_size));
        std::iota(idx.begin(), idx.end(), 0);
        std::vector<int> next(idx.size());
        const auto where = ulfm::translate(nw, idx, world);
        for (std::size_t i = 0; i < where.size(); ++i) next[i] = orig_of[static_cast<std::size_t>(where[i])];
        orig_of = std::move(next);
      }
      if (app != MPI_COMM_NULL) MPI_Comm_free(&app);
      MPI_Comm_free(&world);
      world = nw;
      if (!rep.ok) break;
      if (arc != MPI_SUCCESS && !ulfm::is_failure(arc)) {
        fail("MPIX_Comm_agree: " + ulfm::error_name(arc));
        break;
      }
      const double sp_in = fx::now();
      int src = MPI_Comm_split(world, logical() >= 0 ? 0 : MPI_UNDEFINED, logical(), &app);
      const double sp_out = fx::now();
      int resume = INT_MAX;
      if (src == MPI_SUCCESS && app != MPI_COMM_NULL) {
        MPI_Comm_set_errhandler(app, MPI_ERRORS_RETURN);
        int my_app_rank = -1;
        MPI_Comm_rank(app, &my_app_rank);
        if (my_app_rank != logical()) fail("app rank " + std::to_string(my_app_rank) + " != logical rank");
        resume = was_active ? next_it : INT_MAX;
        src = MPI_Allreduce(MPI_IN_PLACE, &resume, 1, MPI_INT, MPI_MIN, app);
      }
      // Everyone agrees the round worked, or it starts again.
      int good = (src == MPI_SUCCESS && arc == MPI_SUCCESS) ? 1 : 0;
      if (ulfm::agree(world, &good) != MPI_SUCCESS || !good) continue;
      repaired = true;
      if (app != MPI_COMM_NULL) next_it = resume;
      if (repairs == 0) {
        rec[kShrinkIn] = sh_in;
        rec[kShrinkOut] = sh_out;
        rec[kAgreeIn] = ag_in;
        rec[kAgreeOut] = ag_out;
        rec[kSplitIn] = sp_in;
        rec[kSplitOut] = sp_out;
        rec[kResume] = fx::now();
      }
      if (!was_active && logical() >= 0) {
        say(narrate, "[demo] spare (world rank %d) recruited as logical rank %d, resuming at iteration %d\n",
            me, logical(), next_it);
      }
      say(narrate && me == 0, "[demo] repaired: %d active ranks again, resuming at iteration %d\n", n,
          next_it);
    }
    ++repairs;
    if (!rep.ok) break;
  }

  // Gather the first repair's records on world rank 0 of the live world.
  int live_rank = 0, live_size = 0;
  MPI_Comm_rank(world, &live_rank);
  MPI_Comm_size(world, &live_size);
  rep.reporter = live_rank == 0;
  std::vector<double> all(rep.reporter ? rec.size() * static_cast<std::size_t>(live_size) : 0);
  MPI_Gather(rec.data(), kFields, MPI_DOUBLE, all.data(), kFields, MPI_DOUBLE, 0, world);
  int ok = rep.ok ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, world);
  if (!ok && rep.ok) fail("a check failed on another process");
  rep.failures_seen = static_cast<int>(rep.failed.size());
  if (rep.reporter && repairs > 0) {
    const double t_kill = kill_time(dir, cfg.victim);
    double sh_in = 0, sh_out = 0, ag_in = 0, ag_out = 0, sp_in = 0, sp_out = 0, resume = 0;
    for (int p = 0; p < live_size; ++p) {
      const double* r = &all[static_cast<std::size_t>(p) * kFields];
      if (!std::isnan(r[kDetect])) {
        const double ms = 1e3 * (r[kDetect] - t_kill);
        if (r[kWasActive] > 0) {
          rep.detect_ms.push_back(ms);
          rep.detect_error.push_back(static_cast<int>(r[kErr]));
        } else {
          rep.spare_wake_ms.push_back(ms);
        }
      } else {
        std::fprintf(stderr, "[substrate] note: live process %d recorded no detection\n", p);
      }
      sh_in = std::max(sh_in, r[kShrinkIn]);
      sh_out = std::max(sh_out, r[kShrinkOut]);
      ag_in = std::max(ag_in, r[kAgreeIn]);
      ag_out = std::max(ag_out, r[kAgreeOut]);
      sp_in = std::max(sp_in, r[kSplitIn]);
      sp_out = std::max(sp_out, r[kSplitOut]);
      resume = std::max(resume, r[kResume]);
    }
    rep.shrink_ms = 1e3 * (sh_out - sh_in);
    rep.agree_ms = 1e3 * (ag_out - ag_in);
    rep.split_ms = 1e3 * (sp_out - sp_in);
    rep.repair_ms = 1e3 * (resume - t_kill);
  }
  if (rep.reporter) remove_shared_dir(dir);
  if (app != MPI_COMM_NULL) MPI_Comm_free(&app);
  rep.live = world;
  return rep;
}

}  // namespace fx::substrate
