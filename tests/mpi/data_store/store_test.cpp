// Multi-rank data store tests on a fixed communicator (no kills): a rank
// "fails" by dropping its DataStore and its state, like a recruited spare
// that has just run the application's setup.
#include <fmt/format.h>
#include <fx/clock.hpp>
#include <fx/data_store/store.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/recovery/ulfm.hpp>
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string_view>
#include <thread>

#include "level.hpp"  // the store's levels (standard_levels) and a test's own (dir_level.cpp)

namespace {

namespace fs = std::filesystem;

int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

fx::Comm make_comm() {
  MPI_Comm c = MPI_COMM_NULL;
  MPI_Comm_dup(MPI_COMM_WORLD, &c);
  MPI_Comm_set_errhandler(c, MPI_ERRORS_RETURN);
  return fx::Comm(c);
}

// Every rank's state: sizes differ per rank; one member is a strided View
// (staged through a copy), one a LayoutLeft View, one a scalar.
struct State {
  int rank;
  std::vector<double> field;
  Kokkos::View<int**, Kokkos::LayoutLeft, Kokkos::HostSpace> grid;
  Kokkos::View<double**, Kokkos::HostSpace> wide;
  std::int64_t it = -1;

  explicit State(int r)
      : rank(r),
        field(20000 + 1717 * static_cast<std::size_t>(r)),
        grid("grid", 5, 3 + r),
        wide("wide", 50, 3) {}
  void fill(std::int64_t iteration) {
    for (std::size_t i = 0; i < field.size(); ++i)
      field[i] = rank * 1e6 + static_cast<double>(iteration) * 1e3 + 0.5 * i;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 3 + rank; ++j) grid(i, j) = static_cast<int>(iteration * 100 + i * 10 + j);
    }
    for (int i = 0; i < 50; ++i) {
      for (int j = 0; j < 3; ++j) wide(i, j) = j == 1 ? iteration + i * 0.25 : -7.0;
    }
    it = iteration;
  }
  void add_to(fx::DataStore& s) {
    s.add("field", field);
    s.add("grid", grid);
    s.add("column", Kokkos::subview(wide, Kokkos::ALL, 1));
    s.add_scalar("it", it);
  }
  // Bit for bit against a recomputation.
  bool matches(std::int64_t iteration) const {
    State ref(rank);
    ref.fill(iteration);
    bool ok = std::memcmp(field.data(), ref.field.data(), field.size() * sizeof(double)) == 0 && it == ref.it;
    for (int i = 0; i < 5; ++i) {
      for (int j = 0; j < 3 + rank; ++j) ok = ok && grid(i, j) == ref.grid(i, j);
    }
    for (int i = 0; i < 50; ++i) ok = ok && std::memcmp(&wide(i, 1), &ref.wide(i, 1), sizeof(double)) == 0;
    return ok;
  }
};

// One rank's application process: its store and its state.
struct Process {
  std::unique_ptr<State> state;
  std::unique_ptr<fx::DataStore> store;
  std::vector<fx::detail::LevelMaker> levels;  // empty: the standard ones
  Process(const fx::CheckpointConfig& cfg, const fx::Comm& comm,
          std::vector<fx::detail::LevelMaker> with = {})
      : levels(std::move(with)) {
    start(cfg, comm);
  }
  void start(const fx::CheckpointConfig& cfg, const fx::Comm& comm) {
    store.reset();
    state = std::make_unique<State>(comm.rank());
    store = levels.empty() ? fx::detail::StoreAccess::make(cfg) : fx::detail::StoreAccess::make(cfg, levels);
    fx::detail::StoreAccess::set_comm(*store, comm);
    state->add_to(*store);
  }
  // A repair as the runtime does it: the recruited rank starts afresh, the
  // others set the communicator again (the store duplicates it anew).
  void repair(bool recruited, const fx::CheckpointConfig& cfg, const fx::Comm& comm) {
    if (recruited)
      start(cfg, comm);
    else
      fx::detail::StoreAccess::set_comm(*store, comm);
  }
  void commit(std::int64_t it) {
    state->fill(it);
    store->commit(it);
  }
};

// A directory every rank sees, removed at the end.
struct SharedDir {
  fs::path path;
  SharedDir() {
    char buf[256] = {};
    if (world_rank() == 0) {
      std::string tmpl = (fs::temp_directory_path() / "fx-ds-mpi-XXXXXX").string();
      std::strncpy(buf, mkdtemp(tmpl.data()), sizeof(buf) - 1);
    }
    MPI_Bcast(buf, sizeof(buf), MPI_CHAR, 0, MPI_COMM_WORLD);
    path = buf;
  }
  ~SharedDir() {
    MPI_Barrier(MPI_COMM_WORLD);
    if (world_rank() == 0) fs::remove_all(path);
  }
};

bool all_true(bool mine) {
  int v = mine ? 1 : 0;
  MPI_Allreduce(MPI_IN_PLACE, &v, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return v == 1;
}

// Synchronous commits: each returns with its version committed.
fx::CheckpointConfig memory_only() {
  fx::CheckpointConfig c;
  c.memory.every = 1;
  c.memory.async = false;
  c.hdf5.restart = false;
  return c;
}

fx::CheckpointConfig memory_async() {
  fx::CheckpointConfig c = memory_only();
  c.memory.async = true;
  return c;
}

// A member whose save() throws while `explode` is set.
fx::Member bomb_member(const bool& explode) {
  fx::Member bomb;
  bomb.name = "bomb";
  bomb.type = "uint8";
  bomb.extents = {1};
  bomb.bytes = 1;
  bomb.save = [&explode](std::byte* out) {
    if (explode) FX_THROW(fx::CheckpointError, "bomb: cannot save");
    *out = std::byte{1};
  };
  bomb.load = [](const std::byte*) {};
  return bomb;
}

// The runtime's step hook, until the commit in flight is committed.
void progress_until_committed(fx::DataStore& s) {
  while (!fx::detail::StoreAccess::progress(s)) {
  }
}

TEST(DataStoreAsync, CommitFinishesInTheBackground) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  Process p(memory_async(), comm);
  p.commit(1);
  EXPECT_FALSE(p.store->committed_iteration().has_value());  // in flight
  EXPECT_TRUE(p.store->last_commit_stats().async);
  progress_until_committed(*p.store);
  EXPECT_EQ(p.store->committed_iteration(), 1);
  const auto st = fx::detail::StoreAccess::take_committed(*p.store);
  ASSERT_TRUE(st.has_value());
  EXPECT_EQ(st->iteration, 1);
  EXPECT_GE(st->committed_seconds, st->seconds);
  EXPECT_FALSE(fx::detail::StoreAccess::take_committed(*p.store).has_value());  // handed out once

  // The next commit finishes the one in flight first; flush() the last.
  p.commit(2);
  p.commit(3);
  EXPECT_EQ(p.store->committed_iteration(), 2);
  fx::detail::StoreAccess::flush(*p.store);
  EXPECT_EQ(p.store->committed_iteration(), 3);
  const int victim = 1 % n;
  p.repair(r == victim, memory_async(), comm);
  if (r != victim) p.state->fill(9);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 3);
  EXPECT_TRUE(all_true(p.state->matches(3)));
}

// The image exchange of an asynchronous commit moves on a thread of the
// store's (checkpoint.memory.progress: thread): once a step end has posted
// it, it completes while the app's thread makes no MPI call (issue 43,
// item 1). With `app`, the app's calls move it; the copies restore alike.
class DataStoreAsyncProgress : public ::testing::TestWithParam<fx::ExchangeProgress> {};

TEST_P(DataStoreAsyncProgress, TheExchangeMovesOnWithoutTheAppsCalls) {
  using X = fx::detail::StoreAccess::Exchange;
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  const bool threaded = GetParam() == fx::ExchangeProgress::thread;
  fx::CheckpointConfig cfg = memory_async();
  cfg.memory.progress = GetParam();
  Process p(cfg, comm);
  std::vector<double> big(std::size_t{4} << 20, 0.5 * r);  // 32 MiB: no copy in the blink of a flag
  p.store->add("big", big);
  p.commit(1);
  EXPECT_EQ(p.store->last_commit_stats().progress_thread, threaded);
  // Step ends until the sizes are in and the image exchange is posted.
  bool concluded = false;
  while (fx::detail::StoreAccess::exchange(*p.store) == X::not_posted &&
         !(concluded = fx::detail::StoreAccess::progress(*p.store))) {
  }
  if (threaded && concluded) {
    // The thread moved the image between its start and the same step end's
    // look at it (seen under load in CI): that step end concluded the commit.
    EXPECT_TRUE(p.store->last_commit_stats().progress_thread);
  } else if (threaded) {
    // No MPI call on this thread from here: the store's thread alone.
    const double until = fx::now() + 60;
    while (fx::detail::StoreAccess::exchange(*p.store) == X::on_thread && fx::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(fx::detail::StoreAccess::exchange(*p.store), X::done_on_thread);
  } else {
    const X x = fx::detail::StoreAccess::exchange(*p.store);
    EXPECT_TRUE(x == X::in_app_calls || x == X::not_posted);
  }
  fx::detail::StoreAccess::flush(*p.store);
  EXPECT_EQ(p.store->committed_iteration(), 1);
  const int victim = 1 % n;
  p.repair(r == victim, cfg, comm);
  std::fill(big.begin(), big.end(), -1.0);
  if (r == victim) p.store->add("big", big);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 1);
  EXPECT_TRUE(all_true(p.state->matches(1) &&
                       std::all_of(big.begin(), big.end(), [&](double v) { return v == 0.5 * r; })));
}

INSTANTIATE_TEST_SUITE_P(Modes, DataStoreAsyncProgress,
                         ::testing::Values(fx::ExchangeProgress::thread, fx::ExchangeProgress::app),
                         [](const auto& p) { return std::string(fx::to_string(p.param)); });

// Parity commits are asynchronous too (issue 43, item 1): the XOR ring
// moves on in the app's step-end calls, or on the store's thread with no
// MPI call of the app's; a lost rank's image is then rebuilt from the
// others' images and parity blocks, bit for bit. A repair with a ring in
// flight restores the version before it (a rank that cannot save: see
// DataStoreAsync.AFailedSaveFailsTheCommitEverywhere).
class DataStoreParityAsync : public ::testing::TestWithParam<fx::ExchangeProgress> {
 protected:
  fx::CheckpointConfig config() const {
    fx::CheckpointConfig cfg = memory_async();
    cfg.memory.scheme = fx::MemoryScheme::parity;
    cfg.memory.parity_group = 4;
    cfg.memory.progress = GetParam();
    return cfg;
  }
};

TEST_P(DataStoreParityAsync, TheRingMovesOnAndALostImageIsRebuilt) {
  using X = fx::detail::StoreAccess::Exchange;
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a group";
  const bool threaded = GetParam() == fx::ExchangeProgress::thread;
  const fx::CheckpointConfig cfg = config();
  Process p(cfg, comm);
  std::vector<double> big((std::size_t{1} << 20) + 8 * static_cast<std::size_t>(r),
                          0.25 * r);  // sizes differ
  p.store->add("big", big);
  p.commit(1);
  EXPECT_TRUE(p.store->last_commit_stats().async);
  EXPECT_EQ(p.store->last_commit_stats().progress_thread, threaded);
  EXPECT_FALSE(p.store->committed_iteration().has_value());  // in flight
  bool concluded = false;
  while (fx::detail::StoreAccess::exchange(*p.store) == X::not_posted &&
         !(concluded = fx::detail::StoreAccess::progress(*p.store))) {
  }
  if (threaded && !concluded) {
    const double until = fx::now() + 60;  // no MPI call on this thread: the ring on the store's
    while (fx::detail::StoreAccess::exchange(*p.store) == X::on_thread && fx::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    EXPECT_EQ(fx::detail::StoreAccess::exchange(*p.store), X::done_on_thread);
  }
  if (!concluded) progress_until_committed(*p.store);  // a one-step ring may be done with its post
  EXPECT_EQ(p.store->committed_iteration(), 1);
  for (int victim : {1 % n, (n - 1) % n}) {
    p.repair(r == victim, cfg, comm);
    std::fill(big.begin(), big.end(), -1.0);
    if (r == victim) p.store->add("big", big);
    if (r != victim) p.state->fill(9);
    EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 1);
    EXPECT_EQ(p.store->last_restore_level(), fx::CheckpointLevel::memory);
    EXPECT_TRUE(all_true(p.state->matches(1) &&
                         std::all_of(big.begin(), big.end(), [&](double v) { return v == 0.25 * r; })))
        << "victim " << victim;
  }
}

TEST_P(DataStoreParityAsync, ARepairWithTheRingInFlightRestoresTheVersionBefore) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a group";
  const fx::CheckpointConfig cfg = config();
  Process p(cfg, comm);
  p.commit(7);
  fx::detail::StoreAccess::flush(*p.store);
  p.commit(8);  // in flight
  const int victim = n - 1;
  p.repair(r == victim, cfg, comm);
  if (r != victim) p.state->fill(9);
  const auto it = fx::detail::StoreAccess::restore(*p.store);
  ASSERT_TRUE(it.has_value());
  EXPECT_GE(*it, 7);
  EXPECT_TRUE(all_true(p.state->matches(*it)));
}

INSTANTIATE_TEST_SUITE_P(Modes, DataStoreParityAsync,
                         ::testing::Values(fx::ExchangeProgress::thread, fx::ExchangeProgress::app),
                         [](const auto& p) { return std::string(fx::to_string(p.param)); });

// A member promised untouched until the next step ends is copied beside
// that step (on the store's thread, or at the step end): the step-end
// progress() waits for the copy, so what the app writes afterwards is not
// in the version.
class DataStoreCopier : public ::testing::TestWithParam<fx::SnapshotCopier> {};

TEST_P(DataStoreCopier, SnapshotDuringNextStepHoldsTheCommittedState) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  fx::CheckpointConfig cfg = memory_async();
  cfg.memory.copier = GetParam();
  Process p(cfg, comm);
  p.store->set_snapshot("field", fx::Snapshot::during_next_step);
  EXPECT_THROW(p.store->set_snapshot("nope", fx::Snapshot::during_next_step), fx::UsageError);
  p.commit(4);
  fx::detail::StoreAccess::progress(*p.store);  // the end of the next step
  p.state->fill(5);                             // the step after writes the member
  fx::detail::StoreAccess::flush(*p.store);
  EXPECT_EQ(p.store->committed_iteration(), 4);
  const int victim = (n - 1) % n;
  p.repair(r == victim, cfg, comm);
  if (r != victim) p.state->fill(9);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 4);
  EXPECT_TRUE(all_true(p.state->matches(4)));
}
INSTANTIATE_TEST_SUITE_P(Copiers, DataStoreCopier,
                         ::testing::Values(fx::SnapshotCopier::thread, fx::SnapshotCopier::step_end),
                         [](const auto& p) { return std::string(fx::to_string(p.param)); });

// A rank that cannot save fails the asynchronous commit everywhere, when
// it completes; the previous version stays. Buddy and parity alike.
TEST(DataStoreAsync, AFailedSaveFailsTheCommitEverywhere) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  if (comm.size() < 2) GTEST_SKIP() << "needs a buddy";
  for (const auto scheme : {fx::MemoryScheme::buddy, fx::MemoryScheme::parity}) {
    fx::CheckpointConfig cfg = memory_async();
    cfg.memory.scheme = scheme;
    Process p(cfg, comm);
    bool explode = false;
    p.store->add_member(bomb_member(explode));
    p.commit(10);
    explode = r == 1;
    p.commit(20);  // finishes 10
    EXPECT_THROW(fx::detail::StoreAccess::flush(*p.store), fx::CheckpointError)
        << (scheme == fx::MemoryScheme::parity ? "parity" : "buddy");
    EXPECT_EQ(p.store->committed_iteration(), 10);
    explode = false;
    p.state->fill(99);
    EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 10);
    EXPECT_TRUE(all_true(p.state->matches(10)));
  }
}

// A repair while a commit is in flight: the version is restored only when
// every rank got as far as holding it; else the previous one.
TEST(DataStoreAsync, RepairWithACommitInFlight) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  Process p(memory_async(), comm);
  p.commit(7);
  fx::detail::StoreAccess::flush(*p.store);
  p.commit(8);  // in flight
  const int victim = 0;
  p.repair(r == victim, memory_async(), comm);
  if (r != victim) p.state->fill(9);
  const auto it = fx::detail::StoreAccess::restore(*p.store);
  ASSERT_TRUE(it.has_value());
  EXPECT_GE(*it, 7);
  EXPECT_TRUE(all_true(p.state->matches(*it)));
}

TEST(DataStoreBuddy, FreshRankGetsBitIdenticalDataFromItsBuddy) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  Process p(memory_only(), comm);
  for (std::int64_t it = 1; it <= 3; ++it) p.commit(it);
  EXPECT_EQ(p.store->committed_iteration(), 3);
  EXPECT_EQ(p.store->last_commit_stats().level, fx::CheckpointLevel::memory);
  EXPECT_GT(p.store->last_commit_stats().bytes, 0u);

  const int victim = 2 % n;
  p.repair(r == victim, memory_only(), comm);  // a recruited spare
  if (r != victim) p.state->fill(5);           // survivors moved on since the checkpoint
  const auto it = fx::detail::StoreAccess::restore(*p.store);
  ASSERT_TRUE(it.has_value());
  EXPECT_EQ(*it, 3);
  EXPECT_EQ(p.store->last_restore_level(), fx::CheckpointLevel::memory);
  EXPECT_TRUE(all_true(p.state->matches(3)));

  // The recovered rank got the buddy copy it must hold back (in the
  // background): now its ward loses everything and restores through it.
  fx::detail::StoreAccess::flush(*p.store);
  const int ward = (victim + n - 1) % n;
  p.repair(r == ward, memory_only(), comm);
  if (r != ward) p.state->fill(6);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 3);
  EXPECT_TRUE(all_true(p.state->matches(3)));

  // And checkpoints go on from there.
  p.commit(4);
  p.repair(r == victim, memory_only(), comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 4);
  EXPECT_TRUE(all_true(p.state->matches(4)));
}

// A member of over 10 MiB received straight into a recruited rank's new
// memory (the restore advises it onto huge pages first), bit for bit.
TEST(DataStoreBuddy, FreshRankGetsALargeMemberStraightIntoItsMemory) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  auto fill = [r](std::vector<std::uint64_t>& v, std::uint64_t it) {
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = (it << 40) ^ (static_cast<std::uint64_t>(r) << 32) ^ (i * 0x9e37u);
  };
  const std::size_t words = (std::size_t{10} << 20) / 8 + 12345 + static_cast<std::size_t>(r);
  auto big = std::make_unique<std::vector<std::uint64_t>>(words);
  auto store = fx::detail::StoreAccess::make(memory_only());
  fx::detail::StoreAccess::set_comm(*store, comm);
  store->add("big", *big);
  fill(*big, 7);
  store->commit(7);
  const int victim = 1;
  if (r == victim) {  // a recruited spare: new memory, a new store
    store.reset();
    big = std::make_unique<std::vector<std::uint64_t>>(words);
    store = fx::detail::StoreAccess::make(memory_only());
    fx::detail::StoreAccess::set_comm(*store, comm);
    store->add("big", *big);
  } else {
    fill(*big, 8);  // moved on since the checkpoint
    fx::detail::StoreAccess::set_comm(*store, comm);
  }
  EXPECT_EQ(fx::detail::StoreAccess::restore(*store), 7);
  std::vector<std::uint64_t> want(words);
  fill(want, 7);
  EXPECT_TRUE(all_true(*big == want));
}

// Members in the default memory space: device memory on a GPU build
// (make_member's staged path), the same path forced on a host build. A
// recruited rank receives its buddy's copy into pinned memory, whence it
// goes to the device; an asynchronous commit copies them on the store's own
// instance beside the next step; survivors restore through pinned memory.
struct DeviceState {
  static constexpr bool kOnDevice =
      !Kokkos::SpaceAccessibility<Kokkos::HostSpace, Kokkos::DefaultExecutionSpace::memory_space>::accessible;
  int rank;
  Kokkos::View<double**> field;
  Kokkos::View<std::int64_t*, Kokkos::LayoutLeft> ids;
  explicit DeviceState(int r) : rank(r), field("field", 300 + 7 * r, 33), ids("ids", 1000 + r) {}
  template <class V>
  static fx::Member member(const std::string& name, const V& v) {
    if constexpr (kOnDevice) return fx::make_member(name, v);
    return fx::detail::staged_member(name, v, [v]() -> const V& { return v; });
  }
  void add_to(fx::DataStore& s) {
    s.add_member(member("field", field));
    s.add_member(member("ids", ids));
    s.set_snapshot("field", fx::Snapshot::during_next_step);
  }
  void fill(std::int64_t it) {
    const auto f = field;
    const auto d = ids;
    const double base = rank * 1e6 + static_cast<double>(it) * 1e3;
    Kokkos::parallel_for(
        "fill", static_cast<int>(f.extent(0)), KOKKOS_LAMBDA(const int i) {
          for (int j = 0; j < 33; ++j) f(i, j) = base + i * 0.5 + j * 1e-3;
        });
    const std::int64_t key = it * 100000 + rank;
    Kokkos::parallel_for(
        "fill", static_cast<int>(d.extent(0)), KOKKOS_LAMBDA(const int i) { d(i) = key * 7 + i; });
    Kokkos::fence();
  }
  bool matches(std::int64_t it) const {
    DeviceState ref(rank);
    ref.fill(it);
    auto a = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), field);
    auto b = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ref.field);
    auto c = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ids);
    auto e = Kokkos::create_mirror_view_and_copy(Kokkos::HostSpace(), ref.ids);
    return std::memcmp(a.data(), b.data(), a.span() * sizeof(double)) == 0 &&
           std::memcmp(c.data(), e.data(), c.span() * sizeof(std::int64_t)) == 0;
  }
};

class DataStoreDevice : public ::testing::TestWithParam<fx::SnapshotCopier> {};

TEST_P(DataStoreDevice, MembersSurviveALostRankBitwise) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a buddy";
  for (const bool async : {false, true}) {
    fx::CheckpointConfig cfg = async ? memory_async() : memory_only();
    cfg.memory.copier = GetParam();
    auto state = std::make_unique<DeviceState>(r);
    auto store = fx::detail::StoreAccess::make(cfg);
    fx::detail::StoreAccess::set_comm(*store, comm);
    state->add_to(*store);
    state->fill(6);
    store->commit(6);
    fx::detail::StoreAccess::progress(*store);  // the next step's end: the device copy has landed
    state->fill(7);                             // the step after it rewrites the members
    fx::detail::StoreAccess::flush(*store);
    EXPECT_EQ(store->committed_iteration(), 6);
    // The device copies landed in the own image: pinned (issue 43, item 1).
    EXPECT_EQ(fx::detail::StoreAccess::pinned_images(*store), 1);
    const int victim = async ? n - 1 : 1;
    if (r == victim) {  // a recruited spare: fresh device memory, a new store
      store.reset();
      state = std::make_unique<DeviceState>(r);
      store = fx::detail::StoreAccess::make(cfg);
      state->add_to(*store);
    }
    fx::detail::StoreAccess::set_comm(*store, comm);
    EXPECT_EQ(fx::detail::StoreAccess::restore(*store), 6);
    EXPECT_TRUE(all_true(state->matches(6))) << (async ? "async" : "sync");
    // The restored rank checkpoints again from its new memory.
    state->fill(8);
    store->commit(8);
    fx::detail::StoreAccess::flush(*store);
    EXPECT_EQ(store->committed_iteration(), 8);
  }
}
INSTANTIATE_TEST_SUITE_P(Copiers, DataStoreDevice,
                         ::testing::Values(fx::SnapshotCopier::thread, fx::SnapshotCopier::step_end),
                         [](const auto& p) { return std::string(fx::to_string(p.param)); });

// The store's pinned staging buffers and device snapshots are allocated at
// registration (add, set_snapshot), never by a commit: on an H200 the
// first commit's allocations took 166 ms of the app's steps (issue 43,
// item 1). Kokkos' tool hook counts them (a C callback: a counter of the
// test's own).
std::atomic<int> store_allocations{0};

void count_store_allocation(const Kokkos::Tools::SpaceHandle, const char* label, const void*,
                            const std::uint64_t) {
  const std::string_view l(label);
  if (l == "fx_staging" || l == "fx_snapshot") ++store_allocations;
}

TEST(DataStoreDeviceBuffers, AllocatedAtRegistrationNotByACommit) {
  const fx::Comm comm = make_comm();
  DeviceState state(comm.rank());
  auto store = fx::detail::StoreAccess::make(memory_async());
  fx::detail::StoreAccess::set_comm(*store, comm);
  store_allocations = 0;
  Kokkos::Tools::Experimental::set_allocate_data_callback(&count_store_allocation);
  state.add_to(*store);
  const int registered = store_allocations;
  for (std::int64_t it = 1; it <= 3; ++it) {  // more than the versions kept: buffers recycled too
    state.fill(it);
    store->commit(it);
    fx::detail::StoreAccess::flush(*store);
  }
  Kokkos::Tools::Experimental::set_allocate_data_callback(nullptr);
  EXPECT_EQ(registered, 3);  // both members' staging buffers, field's snapshot
  EXPECT_EQ(store_allocations, registered);
  EXPECT_EQ(store->committed_iteration(), 3);
}

// The versions' buffers are made, and their pages touched, at the job's
// start (StoreAccess::reserve, which the runtime calls then), not by its
// first commits: every commit after it reuses them (issue 43, item 1: a
// fresh 64 MiB image cost the first commits of a host run up to 20 times a
// later one's time). Every rank's image the same size, so the buddy's
// copy fits the room reserved for it.
TEST(DataStoreBuddy, CommitsReuseTheBuffersReservedAtTheStart) {
  const fx::Comm comm = make_comm();
  for (const bool async : {false, true}) {
    std::vector<double> field(std::size_t{1} << 16, 1.5);
    auto store = fx::detail::StoreAccess::make(async ? memory_async() : memory_only());
    fx::detail::StoreAccess::set_comm(*store, comm);
    store->add("field", field);
    fx::detail::StoreAccess::reserve(*store);
    const auto reserved = fx::detail::StoreAccess::image_buffers(*store);
    EXPECT_EQ(reserved.size(), comm.size() > 1 ? 4U : 2U);  // depth 2: two slots, each own + buddy copy
    for (std::int64_t it = 1; it <= 5; ++it) {
      field[0] = static_cast<double>(it);
      store->commit(it);
      fx::detail::StoreAccess::flush(*store);
    }
    EXPECT_EQ(store->committed_iteration(), 5);
    EXPECT_EQ(fx::detail::StoreAccess::pinned_images(*store), 0);  // host members: plain memory
    for (const void* b : fx::detail::StoreAccess::image_buffers(*store))
      EXPECT_NE(std::find(reserved.begin(), reserved.end(), b), reserved.end()) << (async ? "async" : "sync");
  }
}

TEST(DataStoreBuddy, DepthAndAFailedCommitKeepThePreviousVersion) {
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  fx::CheckpointConfig cfg = memory_only();
  cfg.memory.depth = 2;
  Process p(cfg, comm);
  for (std::int64_t it = 10; it <= 50; it += 10) p.commit(it);

  // A member that cannot be saved on rank 1 fails the commit of 60 on every
  // rank, consistently, without touching version 50.
  bool explode = false;
  p.store->add_member(bomb_member(explode));
  p.commit(55);
  explode = r == 1;
  EXPECT_THROW(p.commit(60), fx::CheckpointError);
  EXPECT_EQ(p.store->committed_iteration(), 55);
  explode = false;
  p.state->fill(99);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 55);
  EXPECT_TRUE(all_true(p.state->matches(55)));

  // Restoring rolls back; committing the same iteration again replaces it.
  p.commit(60);
  p.commit(70);
  p.state->fill(71);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 70);
  EXPECT_TRUE(all_true(p.state->matches(70)));
}

TEST(DataStoreBuddy, DistanceTwo) {
  const fx::Comm comm = make_comm();
  if (comm.size() < 3) GTEST_SKIP();
  fx::CheckpointConfig cfg = memory_only();
  cfg.memory.buddy_distance = 2;
  Process p(cfg, comm);
  p.commit(7);
  p.repair(comm.rank() == 0, cfg, comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 7);
  EXPECT_TRUE(all_true(p.state->matches(7)));
}

TEST(DataStoreParity, OneRankPerGroupIsRebuiltFromParity) {
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  fx::CheckpointConfig cfg = memory_only();
  cfg.memory.scheme = fx::MemoryScheme::parity;
  cfg.memory.parity_group = 4;
  Process p(cfg, comm);
  p.commit(1);
  p.commit(2);
  for (int victim : {1 % n, (n - 1) % n}) {
    p.repair(comm.rank() == victim, cfg, comm);
    if (comm.rank() != victim) p.state->fill(9);
    EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 2);
    EXPECT_EQ(p.store->last_restore_level(), fx::CheckpointLevel::memory);
    EXPECT_TRUE(all_true(p.state->matches(2))) << "victim " << victim;
  }
  p.commit(3);
  p.repair(comm.rank() == 0, cfg, comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 3);
  EXPECT_TRUE(all_true(p.state->matches(3)));
}

fx::CheckpointConfig with_disk(const fs::path& dir, int keep) {
  fx::CheckpointConfig c;
  c.memory.every = 1;
  c.hdf5.every = 1;
  c.hdf5.keep = keep;
  c.hdf5.directory = (dir / "ckpt").string();
  c.memory.async = false;  // each commit returns with its version on disk
  return c;
}

TEST(DataStoreHdf5, RankAndBuddyLostFallsBackToDisk) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  if (n < 3) GTEST_SKIP();
  fx::CheckpointConfig cfg = with_disk(dir.path, 2);
  cfg.hdf5.every = 2;  // on disk: sequence 2 (iteration 20) only
  Process p(cfg, comm);
  p.commit(10);
  p.commit(20);
  EXPECT_EQ(p.store->last_commit_stats().level, fx::CheckpointLevel::hdf5);
  EXPECT_GT(p.store->last_commit_stats().hdf5_seconds, 0.0);
  p.commit(30);
  EXPECT_EQ(p.store->last_commit_stats().level, fx::CheckpointLevel::memory);
  p.repair(comm.rank() == 1 || comm.rank() == 2, cfg, comm);  // rank 2 held rank 1's copy
  if (comm.rank() != 1 && comm.rank() != 2) p.state->fill(33);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 20);
  EXPECT_EQ(p.store->last_restore_level(), fx::CheckpointLevel::hdf5);
  EXPECT_TRUE(all_true(p.state->matches(20)));
  // Memory redundancy is re-created at once: a single loss now comes back from memory.
  p.repair(comm.rank() == 0, cfg, comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 20);
  EXPECT_EQ(p.store->last_restore_level(), fx::CheckpointLevel::memory);
  EXPECT_TRUE(all_true(p.state->matches(20)));
}

TEST(DataStoreHdf5, ColdRestartAfterACleanStop) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const auto cfg = with_disk(dir.path, 2);
  {
    Process p(cfg, comm);
    for (std::int64_t it = 1; it <= 4; ++it) p.commit(it);
  }
  MPI_Barrier(MPI_COMM_WORLD);  // every rank has deleted its retired files
  if (comm.rank() == 0) {
    // keep: 2 complete versions (4 and 3); 2 is retired (no manifest, its
    // files gone), its directory goes at the next HDF5 checkpoint.
    int complete = 0, dirs = 0;
    for (const auto& e : fs::directory_iterator(dir.path / "ckpt")) {
      ++dirs;
      if (fs::exists(e.path() / "manifest.yaml"))
        ++complete;
      else
        EXPECT_TRUE(fs::is_empty(e.path())) << e.path();
      const auto perms = fs::status(e.path()).permissions();
      EXPECT_EQ(perms & fs::perms::others_write, fs::perms::none);
    }
    EXPECT_EQ(complete, 2);
    EXPECT_EQ(dirs, 3);
  }
  Process fresh(cfg, comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*fresh.store), 4);
  EXPECT_EQ(fresh.store->last_restore_level(), fx::CheckpointLevel::hdf5);
  EXPECT_TRUE(all_true(fresh.state->matches(4)));
  fresh.commit(5);
  EXPECT_EQ(fresh.store->committed_iteration(), 5);
}

TEST(DataStoreHdf5, DamagedVersionsAreSkipped) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  const auto cfg = with_disk(dir.path, 4);
  {
    Process p(cfg, comm);
    for (std::int64_t it = 1; it <= 4; ++it) p.commit(it);
  }
  if (comm.rank() == 0) {
    const fs::path ckpt = dir.path / "ckpt";
    // 4: one bit flipped in rank n-1's field; 3: rank 0's file truncated;
    // 2: rank 1's file missing. Version 1 is intact.
    const fs::path f4 = ckpt / "iter-000000000004" / fmt::format("rank-{:06d}.h5", n - 1);
    std::fstream io(f4, std::ios::in | std::ios::out | std::ios::binary);
    std::vector<char> bytes((std::istreambuf_iterator<char>(io)), {});
    double needle = (n - 1) * 1e6 + 4 * 1e3 + 0.5 * 100;
    const char* np = reinterpret_cast<const char*>(&needle);
    auto at = std::search(bytes.begin(), bytes.end(), np, np + sizeof(double));
    ASSERT_NE(at, bytes.end());
    io.seekp(at - bytes.begin());
    const char flipped = static_cast<char>(*at ^ 0x01);
    io.write(&flipped, 1);
    io.close();
    const fs::path f3 = ckpt / "iter-000000000003" / "rank-000000.h5";
    fs::resize_file(f3, fs::file_size(f3) - 100);
    if (n > 1) fs::remove(ckpt / "iter-000000000002" / "rank-000001.h5");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Process fresh(cfg, comm);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*fresh.store), n > 1 ? 1 : 2);
  EXPECT_EQ(fresh.store->last_restore_level(), fx::CheckpointLevel::hdf5);
  EXPECT_TRUE(all_true(fresh.state->matches(n > 1 ? 1 : 2)));
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) {
    EXPECT_FALSE(fs::exists(dir.path / "ckpt" / "iter-000000000004"));  // abandoned and unusable: removed
  }
}

TEST(DataStoreHdf5, NothingUsableStartsFreshOrStops) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  auto cfg = with_disk(dir.path, 2);
  {
    Process p(cfg, comm);
    p.commit(1);
  }
  if (comm.rank() == 0) fs::remove(dir.path / "ckpt" / "iter-000000000001" / "rank-000000.h5");
  MPI_Barrier(MPI_COMM_WORLD);
  {
    auto stop = cfg;
    stop.hdf5.on_unusable = fx::UnusablePolicy::stop;
    Process strict(stop, comm);
    EXPECT_THROW(fx::detail::StoreAccess::restore(*strict.store),
                 fx::CheckpointError);  // the version left where it was
  }
  Process fresh(cfg, comm);
  EXPECT_FALSE(fx::detail::StoreAccess::restore(*fresh.store).has_value());
  EXPECT_EQ(fresh.store->last_restore_level(), fx::CheckpointLevel::none);
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) {  // failed its checks: aside, never written over in place
    EXPECT_FALSE(fs::exists(dir.path / "ckpt" / "iter-000000000001"));
    EXPECT_TRUE(fs::exists(dir.path / "ckpt" / "quarantine" / "iter-000000000001"));
  }
}

// restore() brings back iteration `it` from `level`, bit for bit on every rank.
void expect_restore(Process& p, std::int64_t it, fx::CheckpointLevel level) {
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), it);
  EXPECT_EQ(p.store->last_restore_level(), level);
  EXPECT_TRUE(all_true(p.state->matches(it)));
}

// The node-local level: every rank of this job sees the same directory
// (one "host"), so the lowest rank reads every image and sends it on.
fx::CheckpointConfig with_node(const fs::path& dir) {
  fx::CheckpointConfig c;
  c.memory.every = 1;
  c.node.every = 1;
  c.node.keep = 2;
  c.node.directory = (dir / "node-{host}").string();
  c.hdf5.directory = (dir / "ckpt").string();
  c.memory.async = false;  // each commit returns with its version stored
  return c;
}

fs::path node_version(const fs::path& dir, std::int64_t it) {
  char host[MPI_MAX_PROCESSOR_NAME] = {};
  int len = 0;
  MPI_Get_processor_name(host, &len);
  return dir / (std::string("node-") + host) / fmt::format("iter-{:012d}", it);
}

TEST(DataStoreNode, ColdRestartFromNodeLocalStorage) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  const auto cfg = with_node(dir.path);
  {
    Process p(cfg, comm);
    for (std::int64_t it = 1; it <= 4; ++it) p.commit(it);
    EXPECT_EQ(p.store->last_commit_stats().level, fx::CheckpointLevel::node);
    EXPECT_GT(p.store->last_commit_stats().node_seconds, 0.0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) {
    // keep 2: versions 4 and 3, each with every rank's image, partner copy
    // and marker; beside them the job's claims on the directory.
    int versions = 0;
    for (const auto& e : fs::directory_iterator(node_version(dir.path, 4).parent_path())) {
      if (e.path().filename() == ".fx-jobs") continue;
      ++versions;
      EXPECT_TRUE(e.path() == node_version(dir.path, 4) || e.path() == node_version(dir.path, 3)) << e.path();
    }
    EXPECT_EQ(versions, 2);
    int files = 0;
    for (const auto& e : fs::directory_iterator(node_version(dir.path, 4))) {
      ++files;
      EXPECT_EQ(e.path().extension() == ".tmp", false) << e.path();
    }
    EXPECT_EQ(files, n > 1 ? 3 * n : 2 * n);
  }
  Process fresh(cfg, comm);
  expect_restore(fresh, 4, fx::CheckpointLevel::node);
  if (n > 1) {  // protected in memory at once: a lost rank comes back from its buddy
    fresh.repair(comm.rank() == n - 1, cfg, comm);
    expect_restore(fresh, 4, fx::CheckpointLevel::memory);
  }
  fresh.commit(5);
  EXPECT_EQ(fresh.store->committed_iteration(), 5);
}

TEST(DataStoreNode, PartnerCopyReplacesALostImage) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP();
  const auto cfg = with_node(dir.path);
  {
    Process p(cfg, comm);
    for (std::int64_t it = 1; it <= 3; ++it) p.commit(it);
  }
  // Rank k's own image of 3 is gone (its "host" was lost); rank k+1 holds
  // its copy (buddy distance 1: every rank is on this one host).
  const int k = n - 1;
  if (comm.rank() == 0) fs::remove(node_version(dir.path, 3) / fmt::format("rank-{:06d}.img", k));
  MPI_Barrier(MPI_COMM_WORLD);
  {
    Process fresh(cfg, comm);
    expect_restore(fresh, 3, fx::CheckpointLevel::node);
  }
  // Its partner copy too: version 2 is the newest complete one.
  if (comm.rank() == 0)
    fs::remove(node_version(dir.path, 3) / fmt::format("partner-{:06d}.img", (k + 1) % n));
  MPI_Barrier(MPI_COMM_WORLD);
  Process fresh(cfg, comm);
  expect_restore(fresh, 2, fx::CheckpointLevel::node);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(node_version(dir.path, 3)));  // above the restored one: removed
}

TEST(DataStoreNode, RankAndBuddyLostFallBackToNodeLocalStorage) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  if (comm.size() < 3) GTEST_SKIP();
  const auto cfg = with_node(dir.path);
  Process p(cfg, comm);
  for (std::int64_t it = 10; it <= 30; it += 10) p.commit(it);
  p.repair(comm.rank() == 1 || comm.rank() == 2, cfg, comm);  // rank 2 held rank 1's copy
  if (comm.rank() != 1 && comm.rank() != 2) p.state->fill(33);
  expect_restore(p, 30, fx::CheckpointLevel::node);
}

// A directory per rank, as if each rank had a host of its own: after the
// "relaunch" rank r lives on host r+2, which holds neither its image nor
// its partner copy (from 3 ranks on), and host k lost its image of 3 (its
// partner copy on host k+1 serves).
TEST(DataStoreNode, RanksOnOtherHostsGetTheirImagesSent) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int r = comm.rank();
  const int n = comm.size();
  if (n < 2) GTEST_SKIP();
  auto host = [&](int h) {
    auto c = with_node(dir.path);
    c.node.directory = (dir.path / fmt::format("host{}", h)).string();
    return c;
  };
  {
    Process p(host(r), comm);
    for (std::int64_t it = 1; it <= 3; ++it) p.commit(it);
  }
  const int k = n - 1;
  if (r == 0)
    fs::remove(dir.path / fmt::format("host{}", k) / "iter-000000000003" / fmt::format("rank-{:06d}.img", k));
  MPI_Barrier(MPI_COMM_WORLD);
  Process fresh(host((r + 2) % n), comm);
  expect_restore(fresh, 3, fx::CheckpointLevel::node);
}

TEST(DataStoreNode, NewerDiskVersionWinsAndNothingLeftStartsFresh) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  const int n = comm.size();
  auto cfg = with_node(dir.path);
  cfg.hdf5.every = 2;  // HDF5: 2 and 4; node-local: 3 and 4
  {
    Process p(cfg, comm);
    for (std::int64_t it = 1; it <= 4; ++it) p.commit(it);
    EXPECT_EQ(p.store->last_commit_stats().level, fx::CheckpointLevel::hdf5);
  }
  if (comm.rank() == 0) {
    fs::remove(node_version(dir.path, 4) / "rank-000000.img");
    if (n > 1) fs::remove(node_version(dir.path, 4) / "partner-000001.img");
  }
  MPI_Barrier(MPI_COMM_WORLD);
  {
    Process fresh(cfg, comm);  // node-local 3 is complete, HDF5 4 is newer
    expect_restore(fresh, 4, fx::CheckpointLevel::hdf5);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) {
    fs::remove_all(dir.path / "ckpt");
    EXPECT_TRUE(fs::exists(node_version(dir.path, 3)));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  {
    Process fresh(cfg, comm);  // no disk: node-local 3
    expect_restore(fresh, 3, fx::CheckpointLevel::node);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (comm.rank() == 0) fs::remove_all(node_version(dir.path, 3).parent_path());
  MPI_Barrier(MPI_COMM_WORLD);
  Process fresh(cfg, comm);
  EXPECT_FALSE(fx::detail::StoreAccess::restore(*fresh.store).has_value());
  EXPECT_EQ(fresh.store->last_restore_level(), fx::CheckpointLevel::none);
}

// After a repair the store's facts of restore()'s fresh rule come from the
// repair's agreement (StoreAccess, the runtime's part): a restore() that
// starts fresh on them makes no collective, so it returns even on a revoked
// communicator, where every collective fails at once. Facts that make no
// fresh start leave it to the reduction, as without them; they serve one
// restore(), and set_comm() and commit() drop them.
TEST(DataStoreRepair, AgreedFreshStartMakesNoCollective) {
  using fx::detail::StoreAccess;
  if (!fx::ulfm::active()) GTEST_SKIP() << "needs ULFM (a revoked communicator)";
  SharedDir dir;
  const fx::Comm revoked = make_comm();
  // Every rank has it before any revokes it (Open MPI crashes on a revoke
  // that arrives while the communicator is still being made there).
  MPI_Barrier(MPI_COMM_WORLD);
  fx::ulfm::revoke(revoked.raw());
  auto agreed_restore = [&](fx::DataStore& s, int facts) {
    StoreAccess::agreed(s, facts);
    return fx::detail::StoreAccess::restore(s);
  };

  // Cold (memory only, hdf5.restart off): nothing anywhere is enough.
  auto cold_owned = fx::detail::StoreAccess::make(memory_only());
  fx::DataStore& cold = *cold_owned;
  fx::detail::StoreAccess::set_comm(cold, revoked);
  EXPECT_EQ(StoreAccess::facts(cold), StoreAccess::kUnused);
  EXPECT_FALSE(agreed_restore(cold, StoreAccess::kUnused).has_value());
  EXPECT_FALSE(cold.last_restore_stats().lost);
  EXPECT_EQ(StoreAccess::facts(cold), StoreAccess::kNothing);                         // restored before
  EXPECT_THROW(fx::detail::StoreAccess::restore(cold), fx::ProcessFailure);           // used once
  EXPECT_THROW(agreed_restore(cold, StoreAccess::kNotRestored), fx::ProcessFailure);  // a version somewhere
  StoreAccess::agreed(cold, StoreAccess::kUnused);
  fx::detail::StoreAccess::set_comm(cold, revoked);
  EXPECT_THROW(fx::detail::StoreAccess::restore(cold), fx::ProcessFailure);

  // Storage that a fresh start reads: only once some rank has restored.
  auto warm_owned = fx::detail::StoreAccess::make(with_node(dir.path));
  fx::DataStore& warm = *warm_owned;
  fx::detail::StoreAccess::set_comm(warm, revoked);
  EXPECT_THROW(agreed_restore(warm, StoreAccess::kUnused), fx::ProcessFailure);
  EXPECT_FALSE(agreed_restore(warm, StoreAccess::kNothing).has_value());

  // A commit makes the facts untrue: the restore after it finds its version.
  Process p(memory_only(), make_comm());
  StoreAccess::agreed(*p.store, StoreAccess::kUnused);
  p.commit(1);
  EXPECT_EQ(StoreAccess::facts(*p.store), StoreAccess::kNotRestored);
  EXPECT_EQ(fx::detail::StoreAccess::restore(*p.store), 1);
  EXPECT_EQ(StoreAccess::facts(*p.store), 0);
}

// Commits a storage level keeps are asynchronous too, with one rank (no
// buddy) or several: the snapshot beside the app's next step, the buddy
// exchange, the levels' files written on a thread of the store's, their
// messages and the agreement moved on by progress() (or flush()), which
// publishes them (marker, manifest) as the version is committed (issue 43).
TEST(DataStoreAsyncStorage, CommitsAreAsynchronousWithStorageDue) {
  SharedDir dir;
  const fx::Comm comm = make_comm();
  fx::CheckpointConfig cfg = memory_async();
  cfg.node.every = 1;
  cfg.node.directory = (dir.path / "node").string();
  cfg.hdf5.every = 2;
  cfg.hdf5.directory = (dir.path / "ckpt").string();
  cfg.hdf5.restart = true;
  {
    Process p(cfg, comm);
    p.store->set_snapshot("field", fx::Snapshot::during_next_step);
    p.commit(1);  // node-local storage
    EXPECT_TRUE(p.store->last_commit_stats().async);
    EXPECT_FALSE(p.store->committed_iteration().has_value());  // in flight
    progress_until_committed(*p.store);
    auto st = fx::detail::StoreAccess::take_committed(*p.store);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->level, fx::CheckpointLevel::node);
    EXPECT_GT(st->node_seconds, 0.0);
    p.commit(2);  // node-local storage and HDF5
    EXPECT_TRUE(p.store->last_commit_stats().async);
    fx::detail::StoreAccess::flush(*p.store);
    EXPECT_EQ(p.store->committed_iteration(), 2);
    st = fx::detail::StoreAccess::take_committed(*p.store);
    ASSERT_TRUE(st.has_value());
    EXPECT_EQ(st->level, fx::CheckpointLevel::hdf5);
    EXPECT_GT(st->hdf5_file_seconds, 0.0);
    p.commit(3);  // in flight when the process goes: its files are never read
  }
  Process fresh(cfg, comm);  // a relaunch: both levels hold 2, the earlier level wins the tie
  expect_restore(fresh, 2, fx::CheckpointLevel::node);
}

// ----------------------------------------------------------- the walk
// The restore walk over each storage level alike, fx's own and the test
// tree's own (dir_level.cpp: a level that is one file and its line in the
// list below): the newest version wins, a version failing its checks on
// one rank is passed over for the one before and set aside, never deleted,
// and when every version fails, on_unusable decides.

}  // namespace

namespace fx::test {  // dir_level.cpp's
extern const CheckpointLevel kDirLevel;
detail::LevelMaker dir_level(const StorageLevelConfig& options);
}  // namespace fx::test

namespace {

struct WalkCase {
  const char* name;
  fx::CheckpointLevel level;
  const char* rank_file;  // rank r's file in a version's directory
  // Damage a file by flipping a bit of its middle (the node level's scan
  // sets aside a truncated file as missing: it checks the sizes), else by
  // cutting 100 bytes off.
  bool flip;
  // A store's settings and levels with this level set by `o`.
  std::function<void(const fx::StorageLevelConfig& o, fx::CheckpointConfig& c,
                     std::vector<fx::detail::LevelMaker>& levels)>
      set;
};

const WalkCase kWalkCases[] = {
    {"node", fx::CheckpointLevel::node, "rank-{:06d}.img", true,
     [](const fx::StorageLevelConfig& o, fx::CheckpointConfig& c, auto&) {
       static_cast<fx::StorageLevelConfig&>(c.node) = o;
       c.node.partner = false;  // one damaged image fails its version
     }},
    {"hdf5", fx::CheckpointLevel::hdf5, "rank-{:06d}.h5", false,
     [](const fx::StorageLevelConfig& o, fx::CheckpointConfig& c, auto&) {
       static_cast<fx::StorageLevelConfig&>(c.hdf5) = o;
     }},
    {"dir", fx::test::kDirLevel, "rank-{:06d}.img", false,
     [](const fx::StorageLevelConfig& o, fx::CheckpointConfig&, auto& levels) {
       levels = fx::detail::standard_levels();
       levels.push_back(fx::test::dir_level(o));  // the level's line in the list
     }},
};

class DataStoreWalk : public ::testing::TestWithParam<WalkCase> {
 protected:
  // Memory and the level under test on at every commit, 4 versions kept.
  Process start(const fx::Comm& comm, fx::UnusablePolicy policy = fx::UnusablePolicy::fresh) {
    fx::StorageLevelConfig o;
    o.every = 1;
    o.keep = 4;
    o.directory = root().string();
    o.on_unusable = policy;
    fx::CheckpointConfig c;
    c.memory.every = 1;
    c.memory.async = false;  // each commit returns with its version stored
    c.hdf5.directory = (dir_.path / "unused").string();
    std::vector<fx::detail::LevelMaker> levels;
    GetParam().set(o, c, levels);
    return Process(c, comm, std::move(levels));
  }
  fs::path root() const { return dir_.path / GetParam().name; }
  fs::path version(std::int64_t it) const { return root() / fmt::format("iter-{:012d}", it); }
  // Rank 0 damages rank q's file of version `it`.
  void damage(std::int64_t it, int q) const {
    if (world_rank() == 0) {
      const fs::path f = version(it) / fmt::format(GetParam().rank_file, q);
      if (GetParam().flip) {
        std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
        io.seekg(static_cast<std::streamoff>(fs::file_size(f) / 2));
        const char c = static_cast<char>(io.get() ^ 0x10);
        io.seekp(static_cast<std::streamoff>(fs::file_size(f) / 2));
        io.put(c);
      } else {
        fs::resize_file(f, fs::file_size(f) - 100);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  void commit_versions(const fx::Comm& comm, std::int64_t last) {
    Process p = start(comm);
    for (std::int64_t it = 1; it <= last; ++it) p.commit(it);
    EXPECT_EQ(p.store->last_commit_stats().level, GetParam().level);
  }
  SharedDir dir_;
};

TEST_P(DataStoreWalk, NewestVersionWins) {
  const fx::Comm comm = make_comm();
  commit_versions(comm, 3);
  Process fresh = start(comm);
  expect_restore(fresh, 3, GetParam().level);
  EXPECT_TRUE(fresh.store->last_restore_stats().skipped.empty());
}

TEST_P(DataStoreWalk, DamagedVersionIsPassedOverAndSetAside) {
  const fx::Comm comm = make_comm();
  commit_versions(comm, 3);
  damage(3, comm.size() - 1);
  Process fresh = start(comm);
  expect_restore(fresh, 2, GetParam().level);
  const auto& skipped = fresh.store->last_restore_stats().skipped;
  ASSERT_EQ(skipped.size(), 1U);
  EXPECT_EQ(skipped[0].level, GetParam().level);
  EXPECT_EQ(skipped[0].iteration, 3);
  MPI_Barrier(MPI_COMM_WORLD);
  EXPECT_FALSE(fs::exists(version(3)));
  EXPECT_TRUE(fs::exists(root() / "quarantine" / "iter-000000000003"));
  fresh.commit(4);  // the level goes on writing
  EXPECT_EQ(fresh.store->last_commit_stats().level, GetParam().level);
}

TEST_P(DataStoreWalk, NothingUsableStartsFreshOrStops) {
  const fx::Comm comm = make_comm();
  commit_versions(comm, 2);
  damage(1, 0);
  damage(2, comm.size() - 1);
  {
    Process strict = start(comm, fx::UnusablePolicy::stop);
    EXPECT_THROW(fx::detail::StoreAccess::restore(*strict.store), fx::CheckpointLost);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  Process fresh = start(comm);
  EXPECT_FALSE(fx::detail::StoreAccess::restore(*fresh.store).has_value());
  EXPECT_EQ(fresh.store->last_restore_level(), fx::CheckpointLevel::none);
  EXPECT_EQ(fresh.store->last_restore_stats().skipped.size(), 2U);
}

INSTANTIATE_TEST_SUITE_P(Levels, DataStoreWalk, ::testing::ValuesIn(kWalkCases),
                         [](const auto& each) { return std::string(each.param.name); });

}  // namespace
