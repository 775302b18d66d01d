// Static store members (DataStore::add_static) through a real kill. Each
// logical rank registers a std::vector and a Kokkos::View as static
// members, of rank-dependent sizes, and fills them in initialize() only:
// a recruited spare has them only if restore() brings them. Every step
// folds them into the dynamic state, so a wrong byte shows in the answer.
// finish() checks, on every rank: the static data are bitwise the logical
// rank's, the state is the failure-free run's, this process's commits sent
// the static data at most once (the first commit; a recruited spare's
// never: the restore re-created its copies; one more after each
// rebuild_static), and a recovered job's
// restore received static bytes somewhere.
//
// Static members a restore cannot give back (the rank and the holder of
// its copy die together, a node-local or HDF5 restore, a resize) go through
// ResilientApp::rebuild_static. With --fill-in-setup, setup() sizes and
// zero-fills them as many apps do, so a resume on them gives a wrong
// answer; --rebuild overrides rebuild_static (without it fx applies
// recovery.on_lost_checkpoint); --resize overrides resize() with
// restore_resized (the state check is then skipped: fewer ranks).
//
// Flags (after fx's own): --iters N --fill-in-setup --rebuild --resize --clean-dir
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <CLI/CLI.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t kMul = 6364136223846793005ULL;

std::size_t table_size(int rank) { return 1000 + 37 * static_cast<std::size_t>(rank); }
std::uint64_t table_entry(int rank, std::size_t i) {
  return (i + 1) * 0x9e3779b97f4a7c15ULL ^ std::uint64_t(rank);
}
double weight(int rank, std::size_t i) { return 1.0 / double(i + 2 + rank); }

class StaticApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("static_app");
    cli.add_option("--iters", iters_);
    cli.add_flag("--fill-in-setup", fill_in_setup_);
    cli.add_flag("--rebuild", rebuild_);
    cli.add_flag("--resize", resize_);
    bool clean = false;
    cli.add_flag("--clean-dir", clean);
    fx_test::parse_app_args(cli, ctx);
    if (clean) fx_test::clean_checkpoint_dir(ctx);
    if (fill_in_setup_) {  // the right sizes, zeros: a resume on them is wrong, not a crash
      table_.assign(table_size(ctx.rank()), 0);
      weights_ =
          Kokkos::View<double*, Kokkos::HostSpace>("weights", 500 + static_cast<std::size_t>(ctx.rank()));
    }
    auto& store = ctx.store();
    store.add_static("table", table_);
    store.add_static("weights", weights_);
    store.add_scalar("state", state_);
  }

  void initialize(fx::Context& ctx) override {
    ++fills_;
    fill(ctx.rank());
    state_ = 1;
  }

#ifndef STATIC_APP_NO_REBUILD  // data_store_static_app_no_rebuild: the default's
  bool rebuild_static(fx::Context& ctx, bool missing) override {
    if (!rebuild_) return false;
    ++fills_;  // the next commit sends everyone's again
    if (missing) {
      fill(ctx.rank());
      std::printf("static_app: rebuilt the static data of rank %d\n", ctx.rank());
    }
    return true;
  }
#endif

  std::int64_t resize(fx::Context& ctx) override {
    if (!resize_) return fx::ResilientApp::resize(ctx);
    resized_ = true;
    setup(ctx);
    const auto v = ctx.store().restore_resized(
        [&](const fx::PriorVersion&) { return std::vector<int>{ctx.rank()}; },
        [&](const fx::PriorPiece& piece) { state_ = piece.scalar<std::uint64_t>("state"); });
    if (v) return v->iteration;
    initialize(ctx);
    return 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    count_statics(ctx);
    state_ = advance(state_, fold(), it);
    const auto all = ctx.comm().allreduce(state_, MPI_BXOR);
    state_ ^= all >> 3;
    return it + 1 >= iters_;
  }

  void finish(fx::Context& ctx) override {
    count_statics(ctx);
    const int r = ctx.rank(), n = ctx.size();
    std::string problems;
    bool same = table_.size() == table_size(r) && weights_.extent(0) == 500 + static_cast<std::size_t>(r);
    for (std::size_t i = 0; same && i < table_.size(); ++i) same = table_[i] == table_entry(r, i);
    for (std::size_t i = 0; same && i < weights_.extent(0); ++i) same = weights_(i) == weight(r, i);
    if (!same) problems += " static data differ from the logical rank's;";
    if (!resized_ && state_ != replay(r, n)) problems += " state differs from the failure-free run's;";
    if (publishes_ > fills_) problems += " static data sent by " + std::to_string(publishes_) + " commits;";
    const auto received = ctx.comm().allreduce(received_, MPI_SUM);
    if (ctx.recoveries() > 0 && received == 0 && !resized_) problems += " no restore received static bytes;";
    if (!problems.empty()) FX_THROW(fx::Error, "static_app rank " + std::to_string(r) + ":" + problems);
    if (r == 0)
      std::printf(
          "static_app: %d ranks, %d recoveries, %llu static bytes received: static data and state match\n", n,
          ctx.recoveries(), static_cast<unsigned long long>(received));
  }

 private:
  // A commit's and a restore's static traffic, each seen once.
  void count_statics(fx::Context& ctx) {
    const auto& c = ctx.store().last_commit_stats();
    if (c.iteration >= 0 && c.iteration != last_commit_) {
      last_commit_ = c.iteration;
      if (c.static_bytes_sent > 0) ++publishes_;
    }
    received_ = std::max(received_, ctx.store().last_restore_stats().static_bytes_received);
  }
  void fill(int r) {
    table_.resize(table_size(r));
    for (std::size_t i = 0; i < table_.size(); ++i) table_[i] = table_entry(r, i);
    weights_ = Kokkos::View<double*, Kokkos::HostSpace>("weights", 500 + static_cast<std::size_t>(r));
    for (std::size_t i = 0; i < weights_.extent(0); ++i) weights_(i) = weight(r, i);
  }
  std::uint64_t fold() const {
    std::uint64_t s = 0;
    for (auto x : table_) s = s * kMul + x;
    for (std::size_t i = 0; i < weights_.extent(0); ++i) {
      std::uint64_t u = 0;
      std::memcpy(&u, &weights_(i), sizeof u);
      s = s * kMul + u;
    }
    return s;
  }
  static std::uint64_t advance(std::uint64_t state, std::uint64_t folded, std::int64_t it) {
    return state * kMul + folded + static_cast<std::uint64_t>(it);
  }
  // The failure-free run of rank r, serially (every rank's state, reduced as step() does).
  std::uint64_t replay(int r, int n) const {
    std::vector<std::uint64_t> states(static_cast<std::size_t>(n), 1), folded(static_cast<std::size_t>(n));
    for (int q = 0; q < n; ++q) {
      StaticApp other;
      other.table_.resize(table_size(q));
      for (std::size_t i = 0; i < other.table_.size(); ++i) other.table_[i] = table_entry(q, i);
      other.weights_ = Kokkos::View<double*, Kokkos::HostSpace>("w", 500 + static_cast<std::size_t>(q));
      for (std::size_t i = 0; i < other.weights_.extent(0); ++i) other.weights_(i) = weight(q, i);
      folded[static_cast<std::size_t>(q)] = other.fold();
    }
    for (std::int64_t it = 0; it < iters_; ++it) {
      std::uint64_t all = 0;
      for (int q = 0; q < n; ++q) {
        auto& s = states[static_cast<std::size_t>(q)];
        s = advance(s, folded[static_cast<std::size_t>(q)], it);
        all ^= s;
      }
      for (auto& s : states) s ^= all >> 3;
    }
    return states[static_cast<std::size_t>(r)];
  }

  std::int64_t iters_ = 30;
  int fills_ = 0;  // initialize() and rebuild_static() calls: each may publish once more
  bool fill_in_setup_ = false, rebuild_ = false, resize_ = false, resized_ = false;
  std::vector<std::uint64_t> table_;
  Kokkos::View<double*, Kokkos::HostSpace> weights_;
  std::uint64_t state_ = 0;
  std::int64_t last_commit_ = -1;
  int publishes_ = 0;
  std::uint64_t received_ = 0;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<StaticApp>(argc, argv); }
