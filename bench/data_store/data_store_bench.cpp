// Checkpoint bandwidth of the data store, per rank, on 2 ranks, with the
// baselines it is judged against measured in the same run:
//   memcpy (both ranks at once), MPI between the two ranks (one way and
//   both ways), and a raw write() + fsync + rename of the same bytes to the
//   same directory.
// Levels: buddy commit (synchronous, and asynchronous alternated with it),
// buddy restore (a fresh rank pulling its image, the
// survivor from its own copy, and the background re-protection), HDF5
// commit and HDF5 cold restore. Every time is the median over repetitions
// of the slower rank's; each repetition measures a level and its baselines
// back to back, and the target ratios are medians of these per-repetition
// ratios (the machine's load may change during a run). Output:
// $FX_BENCH_DIR/<name>.yaml (default bench/results/data_store.yaml).
//
//   data_store_bench [--min-mib 1] [--max-mib 256] [--reps 5] [--dir DIR] [--out FILE]
#include <fx/clock.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/exit_code.hpp>
#include <fx/log.hpp>
#include <fx_bench/results.hpp>

#include <CLI/CLI.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <vector>

namespace {

namespace fs = std::filesystem;
constexpr double kMiB = 1024.0 * 1024.0;

struct Row {
  std::size_t mib = 0;
  int reps = 0;
  // Medians over repetitions of the slower rank's time.
  double memcpy_s = 0, mpi_oneway_s = 0, mpi_exchange_s = 0;
  double commit_s = 0, restore_fresh_s = 0, restore_full_s = 0, restore_own_s = 0;
  double raw_write_s = 0, raw_write_nosync_s = 0, hdf5_file_s = 0, hdf5_write_s = 0, hdf5_commit_s = 0,
         hdf5_restore_s = 0;
  // Medians of the ratios taken within each repetition (robust to load
  // that changes during the run).
  double commit_ratio = 0, restore_ratio = 0, hdf5_file_ratio = 0, hdf5_ratio = 0;
  // Asynchronous commit (during_next_step member) against the synchronous
  // one, alternated: the time the app waited in the commit, its time on it
  // after (step-end progress, the finish), until committed, and a cycle of
  // commit + one step of work that reads the state, each way.
  double async_waited_s = 0, async_after_s = 0, async_committed_s = 0, sync_cycle_s = 0, async_cycle_s = 0;
  double async_wait_ratio = 0, async_cycle_ratio = 0;
  // A member registered with fx::resizable against a fixed one of the same
  // bytes: synchronous commits alternated, and the store's resident memory
  // after two commits (the slower rank's growth).
  double fixed_commit_s = 0, resizable_commit_s = 0, resizable_commit_ratio = 0;
  double fixed_store_mib = 0, resizable_store_mib = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// The slower rank's time of op() (prepare runs first, untimed).
double timed(const std::function<void()>& op, const std::function<void()>& prepare = nullptr) {
  if (prepare) prepare();
  MPI_Barrier(MPI_COMM_WORLD);
  const double t0 = fx::now();
  op();
  double t = fx::now() - t0;
  MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return t;
}

void touch(std::vector<double>& v, double seed) {
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = seed + static_cast<double>(i);
}

void raw_write(const fs::path& file, const void* data, std::size_t n, bool sync) {
  const fs::path tmp = file.string() + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0640);
  if (fd < 0) throw std::runtime_error("cannot create " + tmp.string());
  const char* p = static_cast<const char*>(data);
  for (std::size_t off = 0; off < n;) {
    const ssize_t w = ::write(fd, p + off, std::min<std::size_t>(n - off, std::size_t{1} << 30));
    if (w <= 0) throw std::runtime_error("write failed on " + tmp.string());
    off += static_cast<std::size_t>(w);
  }
  if (sync) ::fsync(fd);
  ::close(fd);
  ::rename(tmp.c_str(), file.c_str());
  if (sync) {
    const int dfd = ::open(file.parent_path().c_str(), O_RDONLY | O_DIRECTORY);
    ::fsync(dfd);
    ::close(dfd);
  }
}

fx::Comm make_comm() {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return fx::Comm(c);
}

// Rank 1 as a fresh process: a new store and new (touched) state.
struct Fresh {
  std::unique_ptr<fx::DataStore> store;
  std::vector<double> state;
  void start(const fx::CheckpointConfig& cfg, const fx::Comm& comm, std::size_t n) {
    store.reset();
    state.assign(n, 0.0);
    store = fx::detail::StoreAccess::make(cfg);
    fx::detail::StoreAccess::set_comm(*store, comm);
    store->add("state", state);
  }
};

// This process's resident memory (MiB).
double resident_mib() {
  std::ifstream statm("/proc/self/statm");
  std::size_t pages = 0, resident = 0;
  statm >> pages >> resident;
  return static_cast<double>(resident) * static_cast<double>(sysconf(_SC_PAGESIZE)) / kMiB;
}

// fx::resizable against a fixed member of the same bytes (issue 39's target:
// time and memory per commit at most 1.05x).
void measure_resizable(Row& row, std::size_t n, int reps, const fx::CheckpointConfig& mem,
                       const fx::Comm& comm) {
  std::vector<double> fixed(n), varying(n);
  touch(fixed, comm.rank());
  touch(varying, comm.rank());
  // The store's growth over two commits, with the slower rank's figure.
  auto grown = [&](fx::DataStore& store) {
    fx::detail::StoreAccess::set_comm(store, comm);
    const double before = resident_mib();
    store.commit(1);
    store.commit(2);
    double mib = resident_mib() - before;
    MPI_Allreduce(MPI_IN_PLACE, &mib, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return mib;
  };
  auto fs_owned = fx::detail::StoreAccess::make(mem);
  auto vs_owned = fx::detail::StoreAccess::make(mem);
  fx::DataStore& fs = *fs_owned;
  fx::DataStore& vs = *vs_owned;
  fs.add("state", fixed);
  vs.add("state", fx::resizable(varying));
  row.fixed_store_mib = grown(fs);
  row.resizable_store_mib = grown(vs);
  std::vector<double> f, v, ratio;
  std::int64_t it = 2;
  for (int i = 0; i < reps; ++i) {
    ++it;
    f.push_back(timed([&] { fs.commit(it); }, [&] { fixed[0] = static_cast<double>(it); }));
    v.push_back(timed([&] { vs.commit(it); }, [&] { varying[0] = static_cast<double>(it); }));
    ratio.push_back(v.back() / f.back());
  }
  row.fixed_commit_s = median(f);
  row.resizable_commit_s = median(v);
  row.resizable_commit_ratio = median(ratio);
}

Row measure(std::size_t mib, int reps, const fs::path& dir, const fx::Comm& comm) {
  const int r = comm.rank();
  const std::size_t bytes = mib << 20;
  const std::size_t n = bytes / sizeof(double);
  Row row;
  row.mib = mib;
  row.reps = reps;
  std::vector<double> state(n), scratch(n);
  touch(state, r);
  touch(scratch, 0);

  fx::CheckpointConfig mem;
  mem.memory.every = 1;
  mem.memory.async = false;
  mem.hdf5.restart = false;
  auto store_owned = fx::detail::StoreAccess::make(mem);
  fx::DataStore& store = *store_owned;
  fx::detail::StoreAccess::set_comm(store, comm);
  store.add("state", state);
  std::int64_t it = 0;
  store.commit(++it);  // two warm-up commits fill the recycled buffers
  store.commit(++it);
  fx::CheckpointConfig amem = mem;
  amem.memory.async = true;
  auto astore_owned = fx::detail::StoreAccess::make(amem);
  fx::DataStore& astore = *astore_owned;
  fx::detail::StoreAccess::set_comm(astore, comm);
  astore.add("state", state);
  astore.set_snapshot("state", fx::Snapshot::during_next_step);
  std::vector<double> work(n);
  touch(work, 1);
  // One step of an app: reads the state, writes elsewhere.
  auto step = [&] {
    for (std::size_t i = 0; i < n; ++i) work[i] = 0.5 * (work[i] + state[i]);
  };
  std::int64_t ait = 0;
  for (int w = 0; w < 2; ++w) {
    astore.commit(++ait);
    fx::detail::StoreAccess::flush(astore);
  }
  Fresh fresh;
  fx::DataStore& mine = store;
  auto restorer = [&]() -> fx::DataStore& { return r == 1 ? *fresh.store : mine; };

  std::vector<double> cp, one, ex, commit, own, pull, full, commit_ratio, restore_ratio;
  std::vector<double> awaited, acommitted, aafter, scycle, acycle, await_ratio, acycle_ratio;
  for (int i = 0; i < reps; ++i) {
    // Synchronous and asynchronous commits, alternated, each followed by
    // one step; the async one finishes at the step end (progress) or in
    // the flush standing for the next commit.
    const double sc = timed([&] {
      store.commit(++it);
      step();
    });
    const double ac = timed([&] {
      astore.commit(++ait);
      step();
      fx::detail::StoreAccess::progress(astore);
      fx::detail::StoreAccess::flush(astore);
    });
    const auto st = fx::detail::StoreAccess::take_committed(astore);
    if (!st) throw std::runtime_error("asynchronous commit not committed after flush()");
    double w[3] = {st->seconds, st->committed_seconds, st->background_seconds};
    MPI_Allreduce(MPI_IN_PLACE, w, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    scycle.push_back(sc);
    acycle.push_back(ac);
    awaited.push_back(w[0]);
    acommitted.push_back(w[1]);
    aafter.push_back(w[2]);
    cp.push_back(timed([&] { std::memcpy(scratch.data(), state.data(), bytes); }));
    one.push_back(timed([&] {
      if (r == 0)
        MPI_Send(state.data(), static_cast<int>(n), MPI_DOUBLE, 1, 0, MPI_COMM_WORLD);
      else
        MPI_Recv(scratch.data(), static_cast<int>(n), MPI_DOUBLE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }));
    ex.push_back(timed([&] {
      MPI_Sendrecv(state.data(), static_cast<int>(n), MPI_DOUBLE, 1 - r, 1, scratch.data(),
                   static_cast<int>(n), MPI_DOUBLE, 1 - r, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }));
    commit.push_back(timed([&] { store.commit(++it); }, [&] { state[0] = static_cast<double>(it); }));
    own.push_back(timed([&] { fx::detail::StoreAccess::restore(store); }));
    // Rank 1 restarts as a fresh process and pulls its image from rank 0.
    pull.push_back(timed([&] { fx::detail::StoreAccess::restore(restorer()); },
                         [&] {
                           // A repair: rank 1 is new, rank 0 sets the comm again.
                           if (r == 1)
                             fresh.start(mem, comm, n);
                           else
                             fx::detail::StoreAccess::set_comm(store, comm);
                         }));
    if (r == 1 && std::memcmp(fresh.state.data(), state.data(), bytes) != 0) {
      throw std::runtime_error("restored state differs");
    }
    // The same with the re-protection it leaves running (own copy and
    // buddy copy for the fresh rank) completed.
    full.push_back(timed(
        [&] {
          fx::detail::StoreAccess::restore(restorer());
          fx::detail::StoreAccess::flush(restorer());
        },
        [&] {
          if (r == 1)
            fresh.start(mem, comm, n);
          else
            fx::detail::StoreAccess::set_comm(store, comm);
        }));
    // Both stores of the next commit start on a new communicator of their
    // own, as after a repair: rank 1's was left paired with none.
    fx::detail::StoreAccess::set_comm(store, comm);
    commit_ratio.push_back((cp.back() > one.back() ? cp.back() : one.back()) / commit.back());
    await_ratio.push_back(awaited.back() / commit.back());
    acycle_ratio.push_back(acycle.back() / scycle.back());
    restore_ratio.push_back(pull.back() / one.back());
  }
  row.memcpy_s = median(cp);
  row.mpi_oneway_s = median(one);
  row.mpi_exchange_s = median(ex);
  row.commit_s = median(commit);
  row.restore_own_s = median(own);
  row.restore_fresh_s = median(pull);
  row.restore_full_s = median(full);
  row.commit_ratio = median(commit_ratio);
  row.restore_ratio = median(restore_ratio);
  row.async_waited_s = median(awaited);
  row.async_committed_s = median(acommitted);
  row.async_after_s = median(aafter);
  row.sync_cycle_s = median(scycle);
  row.async_cycle_s = median(acycle);
  row.async_wait_ratio = median(await_ratio);
  row.async_cycle_ratio = median(acycle_ratio);
  fresh.store.reset();
  measure_resizable(row, n, reps, mem, comm);

  // HDF5 level against a raw write of the same bytes to the same directory.
  const fs::path raw = dir / fmt::format("raw-{}.bin", r);
  fx::CheckpointConfig disk = mem;
  disk.hdf5.every = 1;
  disk.hdf5.keep = 1;
  disk.hdf5.restart = true;
  disk.hdf5.directory = (dir / "ckpt").string();
  {
    auto h5_owned = fx::detail::StoreAccess::make(disk);
    fx::DataStore& h5 = *h5_owned;
    fx::detail::StoreAccess::set_comm(h5, comm);
    h5.add("state", state);
    std::int64_t k = 0;
    h5.commit(++k);
    std::vector<double> rw, rwn, hf, hw, hc, file_ratio, ratio;
    for (int i = 0; i < reps; ++i) {
      rw.push_back(timed([&] { raw_write(raw, state.data(), bytes, true); }));
      rwn.push_back(timed([&] { raw_write(raw, state.data(), bytes, false); }));
      state[0] = static_cast<double>(i);
      hc.push_back(timed([&] { h5.commit(++k); }));
      double w = h5.last_commit_stats().hdf5_seconds;
      MPI_Allreduce(MPI_IN_PLACE, &w, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      hw.push_back(w);
      ratio.push_back(rw.back() / w);
      double f = h5.last_commit_stats().hdf5_file_seconds;
      MPI_Allreduce(MPI_IN_PLACE, &f, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      hf.push_back(f);
      file_ratio.push_back(rw.back() / f);
    }
    fs::remove(raw);
    row.raw_write_s = median(rw);
    row.raw_write_nosync_s = median(rwn);
    row.hdf5_write_s = median(hw);
    row.hdf5_file_s = median(hf);
    row.hdf5_file_ratio = median(file_ratio);
    row.hdf5_commit_s = median(hc);
    row.hdf5_ratio = median(ratio);
  }
  {
    std::vector<double> hr;
    Fresh cold;
    for (int i = 0; i < reps; ++i) {
      hr.push_back(
          timed([&] { fx::detail::StoreAccess::restore(*cold.store); }, [&] { cold.start(disk, comm, n); }));
      if (cold.store->last_restore_level() != fx::CheckpointLevel::hdf5)
        throw std::runtime_error("HDF5 restore did not come from disk");
    }
    row.hdf5_restore_s = median(hr);
  }
  if (r == 0) fs::remove_all(dir / "ckpt");
  MPI_Barrier(MPI_COMM_WORLD);
  return row;
}

double gbs(std::size_t mib, double s) { return s > 0 ? static_cast<double>(mib) * kMiB / s / 1e9 : 0; }

void write_results(const std::string& path, const std::vector<Row>& rows, int reps, const fs::path& dir) {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  const std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", std::localtime(&now));
  fx_bench::Results res;
  YAML::Emitter& y = res.yaml();
  y << YAML::BeginMap;
  y << YAML::Key << "benchmark" << YAML::Value << "data_store";
  y << YAML::Key << "date" << YAML::Value << date;
  y << YAML::Key << "host" << YAML::Value << host;
  y << YAML::Key << "ranks" << YAML::Value << 2;
  y << YAML::Key << "reps" << YAML::Value << reps;
  y << YAML::Key << "directory" << YAML::Value << dir.string();
  y << YAML::Key << "units" << YAML::Value << YAML::Flow << YAML::BeginMap;
  y << YAML::Key << "bandwidth" << YAML::Value << "GB/s (1e9 bytes/s) per rank";
  y << YAML::Key << "time" << YAML::Value << "seconds";
  y << YAML::Key << "size" << YAML::Value << "MiB per rank" << YAML::EndMap;
  y << YAML::Key << "method" << YAML::Value
    << "median over reps of the slower rank's time; baselines measured in the same run";
  y << YAML::Key << "rows" << YAML::Value << YAML::BeginSeq;
  for (const auto& w : rows) {
    const std::pair<const char*, double> values[] = {
        {"memcpy_gbs", gbs(w.mib, w.memcpy_s)},
        {"mpi_oneway_gbs", gbs(w.mib, w.mpi_oneway_s)},
        {"mpi_exchange_gbs", gbs(w.mib, w.mpi_exchange_s)},
        {"buddy_commit_gbs", gbs(w.mib, w.commit_s)},
        {"buddy_commit_s", w.commit_s},
        {"async_commit_waited_s", w.async_waited_s},
        {"async_commit_after_s", w.async_after_s},
        {"async_commit_committed_s", w.async_committed_s},
        {"sync_commit_and_step_s", w.sync_cycle_s},
        {"async_commit_and_step_s", w.async_cycle_s},
        {"buddy_restore_fresh_s", w.restore_fresh_s},
        {"buddy_restore_fresh_gbs", gbs(w.mib, w.restore_fresh_s)},
        {"buddy_restore_with_reprotect_s", w.restore_full_s},
        {"buddy_restore_own_s", w.restore_own_s},
        {"one_transfer_s", w.mpi_oneway_s},
        {"raw_write_fsync_gbs", gbs(w.mib, w.raw_write_s)},
        {"raw_write_nosync_gbs", gbs(w.mib, w.raw_write_nosync_s)},
        {"hdf5_file_gbs", gbs(w.mib, w.hdf5_file_s)},
        {"hdf5_level_gbs", gbs(w.mib, w.hdf5_write_s)},
        {"hdf5_commit_gbs", gbs(w.mib, w.hdf5_commit_s)},
        {"hdf5_restore_gbs", gbs(w.mib, w.hdf5_restore_s)},
        {"fixed_commit_s", w.fixed_commit_s},
        {"resizable_commit_s", w.resizable_commit_s},
        {"fixed_store_mib", w.fixed_store_mib},
        {"resizable_store_mib", w.resizable_store_mib},
    };
    y << YAML::BeginMap;
    y << YAML::Key << "size_mib" << YAML::Value << w.mib;
    y << YAML::Key << "reps" << YAML::Value << w.reps;
    for (const auto& [key, value] : values) y << YAML::Key << key << YAML::Value << value;
    y << YAML::EndMap;
  }
  y << YAML::EndSeq;
  // The targets, at 64 MiB and above.
  y << YAML::Key << "targets" << YAML::Value << YAML::BeginMap;
  auto target = [&](const char* name, const char* what, const char* op, double goal,
                    const std::function<double(const Row&)>& ratio) {
    y << YAML::Key << name << YAML::Value << YAML::BeginMap;
    y << YAML::Key << "what" << YAML::Value << what;
    y << YAML::Key << "target" << YAML::Value;
    res.target(op, goal);
    y << YAML::Key << "ratios" << YAML::Value << YAML::BeginSeq;
    bool met = true, any = false;
    for (const auto& w : rows) {
      if (w.mib < 64) continue;
      const double v = ratio(w);
      any = true;
      met = met && (op[0] == '<' ? v <= goal : v >= goal);
      y << YAML::Flow << YAML::BeginMap << YAML::Key << "size_mib" << YAML::Value << w.mib << YAML::Key
        << "ratio" << YAML::Value << v << YAML::EndMap;
    }
    y << YAML::EndSeq;
    y << YAML::Key << "met" << YAML::Value;
    if (any)
      y << met;
    else
      y << "n/a (no size >= 64 MiB)";
    y << YAML::EndMap;
  };
  target("buddy_commit", "buddy commit bandwidth / min(memcpy, MPI one-way), per repetition", ">=", 0.5,
         [](const Row& w) { return w.commit_ratio; });
  target("async_commit_wait",
         "time the app waited in an asynchronous commit (during_next_step member) / a synchronous commit, "
         "alternated, per repetition",
         "<=", 0.3, [](const Row& w) { return w.async_wait_ratio; });
  target("async_commit_cycle",
         "commit + one step that reads the state: asynchronous / synchronous, alternated, per repetition",
         "<=", 1.0, [](const Row& w) { return w.async_cycle_ratio; });
  target("hdf5_write",
         "HDF5 file write (write, flush, fsync, rename) / raw write()+fsync+rename, per repetition",
         ">=", 0.7, [](const Row& w) { return w.hdf5_file_ratio; });
  target(
      "hdf5_level",
      "whole HDF5 level (file + agreement + manifest + retention) / raw write()+fsync+rename, per repetition",
      ">=", 0.7, [](const Row& w) { return w.hdf5_ratio; });
  target("buddy_restore",
         "restore time of a fresh rank from its buddy (re-protection left running) / one buddy transfer, per "
         "repetition",
         "<=", 1.3, [](const Row& w) { return w.restore_ratio; });
  target(
      "resizable_commit",
      "synchronous commit of a member registered with fx::resizable / of a fixed member of the same bytes, "
      "alternated, per repetition",
      "<=", 1.05, [](const Row& w) { return w.resizable_commit_ratio; });
  target(
      "resizable_memory",
      "the store's resident growth over two commits: fx::resizable member / fixed member of the same bytes",
      "<=", 1.05,
      [](const Row& w) { return w.fixed_store_mib > 0 ? w.resizable_store_mib / w.fixed_store_mib : 0; });
  y << YAML::EndMap << YAML::EndMap;
  res.write(path);
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  Kokkos::ScopeGuard kokkos(argc, argv);
  int r = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  fx::log::set_identity('r', r, size);
  fx::log::set_level(fx::log::Level::warn);

  const char* root_env = std::getenv("FX_ROOT");
  const fs::path root = root_env ? root_env : ".";
  const char* bench_dir = std::getenv("FX_BENCH_DIR");
  const char* bench_name = std::getenv("FX_BENCH_NAME");
  std::size_t min_mib = 1, max_mib = 256;
  int reps = 5;
  std::string dir = (root / "bench" / "results" / "data_store_scratch").string();
  std::string out = ((bench_dir ? fs::path(bench_dir) : root / "bench" / "results") /
                     (std::string(bench_name ? bench_name : "data_store") + ".yaml"))
                        .string();
  CLI::App cli("data_store_bench");
  cli.add_option("--min-mib", min_mib, "smallest size per rank (MiB)");
  cli.add_option("--max-mib", max_mib, "largest size per rank (MiB); 512 for the full sweep");
  cli.add_option("--reps", reps, "repetitions per measurement (fewer above 64 MiB)");
  cli.add_option("--dir", dir, "directory for the HDF5 level and the raw writes");
  cli.add_option("--out", out, "YAML output");
  try {
    cli.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (r == 0) cli.exit(e);
    MPI_Finalize();
    return 2;
  }
  int code = 0;
  try {
    if (size != 2) throw std::runtime_error("run on exactly 2 ranks");
    if (r == 0) fs::create_directories(dir);
    MPI_Barrier(MPI_COMM_WORLD);
    const fx::Comm comm = make_comm();
    std::vector<Row> rows;
    for (std::size_t mib = min_mib; mib <= max_mib; mib *= 2) {
      const int k = mib <= 64 ? reps : std::max(3, reps / 2);
      rows.push_back(measure(mib, k, dir, comm));
      const Row& w = rows.back();
      if (r == 0) {
        std::printf(
            "%4zu MiB: memcpy %.2f  mpi %.2f  commit %.2f GB/s (ratio %.2f) | restore %.1f ms, +reprotect "
            "%.1f ms, transfer %.1f ms (ratio %.2f) | hdf5 file %.3f level %.3f raw %.3f GB/s (ratios %.2f "
            "%.2f)\n",
            mib, gbs(mib, w.memcpy_s), gbs(mib, w.mpi_oneway_s), gbs(mib, w.commit_s), w.commit_ratio,
            w.restore_fresh_s * 1e3, w.restore_full_s * 1e3, w.mpi_oneway_s * 1e3, w.restore_ratio,
            gbs(mib, w.hdf5_file_s), gbs(mib, w.hdf5_write_s), gbs(mib, w.raw_write_s), w.hdf5_file_ratio,
            w.hdf5_ratio);
        std::printf(
            "          async commit: waited %.1f ms (/ sync commit %.2f), %.1f ms after, committed after "
            "%.1f ms "
            "| commit + step %.1f ms async, %.1f ms sync (ratio %.2f)\n",
            w.async_waited_s * 1e3, w.async_wait_ratio, w.async_after_s * 1e3, w.async_committed_s * 1e3,
            w.async_cycle_s * 1e3, w.sync_cycle_s * 1e3, w.async_cycle_ratio);
        std::printf(
            "          resizable member: commit %.2f ms, fixed %.2f ms (ratio %.3f) | store memory %.1f MiB, "
            "fixed %.1f MiB\n",
            w.resizable_commit_s * 1e3, w.fixed_commit_s * 1e3, w.resizable_commit_ratio,
            w.resizable_store_mib, w.fixed_store_mib);
        std::fflush(stdout);
      }
    }
    if (r == 0) {
      write_results(out, rows, reps, dir);
      std::printf("data_store_bench: wrote %s\n", out.c_str());
      fs::remove_all(dir);
      fx::write_status(fx::ExitCode::ok, "benchmark done");
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "data_store_bench: rank %d: %s\n", r, e.what());
    if (r == 0) fx::write_status(fx::ExitCode::error, e.what());
    code = 1;
  }
  MPI_Finalize();
  return code;
}
