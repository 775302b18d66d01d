// A resilient app for the data store's real-kill tests. Each logical rank
// evolves a block of 64-bit words (an LCG keyed to rank and iteration, fed
// by its left neighbour), derives a LayoutLeft View of doubles from it, and
// folds a global sum into an accumulator. finish() replays the failure-free
// run serially and compares every rank's state bit for bit.
//
// Kills come from FX_DS_KILL, ','-separated (';' would split a CMake list), each fired by the process
// holding the logical rank, only while ctx.recoveries() == K (default 0):
//   step:R@IT[#K]     raise(SIGKILL) at the start of step IT
//   commit:R@IT[#K]   ... inside the checkpoint of iteration IT (a member's save)
//   restore:R@K       ... inside the restore after the K-th repair (a member's load)
//   job@IT            every rank inside the checkpoint of iteration IT (the
//                     whole job dies; no MPI call lies between the last step's
//                     reduction and that point, so no rank can see another die);
//                     rank 0 first leaves the verdict "aborted" (4) for the
//                     launcher, which otherwise may wait on mpiexec for ever
//
// Flags (after fx's own): --iters N --n WORDS --expect-level memory|hdf5|none
//   --expect-recoveries K --expect-first-step IT
//   --clean-dir (rank 0 empties the HDF5 directory first: repeatable runs)
#include <fx/exit_code.hpp>
#include <fx/fx.hpp>

#include <CLI/CLI.hpp>

#include <csignal>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <sstream>
#include <vector>

namespace {

constexpr std::uint64_t kMul = 6364136223846793005ULL;

struct Kill {
  std::string where;  // step | commit | restore | job
  int rank = -1;      // -1: every rank
  std::int64_t at = -1;
  int recoveries = 0;
};

std::vector<Kill> parse_kills(const char* env) {
  std::vector<Kill> out;
  if (!env) return out;
  std::stringstream in(env);
  for (std::string item; std::getline(in, item, ',');) {
    if (item.empty()) continue;
    Kill k;
    const auto colon = item.find(':');
    const auto at = item.find('@');
    if (at == std::string::npos) FX_THROW(fx::UsageError, "FX_DS_KILL: expected where:rank@iteration, got " + item);
    k.where = item.substr(0, colon == std::string::npos ? at : colon);
    if (k.where != "job") k.rank = std::stoi(item.substr(colon + 1, at - colon - 1));
    const auto hash = item.find('#');
    k.at = std::stoll(item.substr(at + 1, hash == std::string::npos ? std::string::npos : hash - at - 1));
    if (hash != std::string::npos) k.recoveries = std::stoi(item.substr(hash + 1));
    if (k.where == "restore") k.recoveries = static_cast<int>(k.at);
    out.push_back(k);
  }
  return out;
}

std::uint64_t seed(int rank, std::size_t i) { return 1000003ULL * static_cast<std::uint64_t>(rank) + i; }

// One rank's update; shared by the parallel run and the serial replay.
std::uint64_t advance(std::vector<std::uint64_t>& w, int rank, std::int64_t it, std::uint64_t from_left) {
  std::uint64_t local = 0;
  for (auto& x : w) {
    x = x * kMul + static_cast<std::uint64_t>(it + 1) * static_cast<std::uint64_t>(rank + 1) + from_left;
    local += x >> 7;
  }
  return local;
}

template <class View>
void derive(const std::vector<std::uint64_t>& w, const View& aux, std::int64_t it) {
  for (std::size_t i = 0; i < aux.extent(0); ++i) {
    for (std::size_t j = 0; j < aux.extent(1); ++j) {
      aux(i, j) = static_cast<double>(w[i * aux.extent(1) + j] >> 11) * 0x1p-53 + static_cast<double>(it);
    }
  }
}

class StoreApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("data_store_ft_app");
    cli.add_option("--iters", iters_);
    cli.add_option("--n", n_);
    cli.add_option("--expect-level", expect_level_);
    cli.add_option("--expect-recoveries", expect_recoveries_);
    cli.add_option("--expect-first-step", expect_first_step_);
    bool clean = false;
    cli.add_flag("--clean-dir", clean);
    std::vector<std::string> args(ctx.args().rbegin(), ctx.args().rend() - 1);  // CLI11 wants reversed
    cli.parse(args);
    kills_ = parse_kills(std::getenv("FX_DS_KILL"));
    ctx_ = &ctx;
    // Before any checkpoint exists: other ranks touch the directory only
    // after collective steps (or through rank 0's listing at a cold start).
    if (clean && ctx.rank() == 0 && ctx.role() == fx::Role::initial && ctx.recoveries() == 0) {
      std::filesystem::remove_all(ctx.fx_config().checkpoint.hdf5.directory);
    }

    words_.assign(n_, 0);
    aux_ = Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace>("aux", n_ / 8, 8);
    // The probe is a one-byte member whose save/load are where the
    // commit and restore kills happen.
    fx::Member probe = fx::make_member("probe", &probe_, 1);
    probe.host = nullptr;
    probe.save = [this](std::byte* out) {
      maybe_kill("commit", next_);
      maybe_kill("job", next_);
      std::memcpy(out, &probe_, 1);
    };
    probe.load = [this](const std::byte* in) {
      maybe_kill("restore", ctx_->recoveries());
      std::memcpy(&probe_, in, 1);
    };
    ctx.store().add_member(probe);
    ctx.store().add("words", words_);
    ctx.store().add("aux", aux_);
    ctx.store().add_scalar("acc", acc_);
  }

  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < n_; ++i) words_[i] = seed(ctx.rank(), i);
    acc_ = 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (first_step_ < 0) first_step_ = it;
    maybe_kill("step", it);
    const auto& comm = ctx.comm();
    const int r = ctx.rank(), p = ctx.size();
    std::uint64_t left = 0;
    comm.sendrecv(&words_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 7);
    const std::uint64_t local = advance(words_, r, it, left);
    derive(words_, aux_, it);
    acc_ = acc_ * 31 + comm.allreduce(local, MPI_SUM);
    next_ = it + 1;
    return it + 1 >= iters_;
  }

  void finish(fx::Context& ctx) override {
    const int r = ctx.rank(), p = ctx.size();
    // The failure-free run, serially, for every rank.
    std::vector<std::vector<std::uint64_t>> w(static_cast<std::size_t>(p), std::vector<std::uint64_t>(n_));
    for (int q = 0; q < p; ++q)
      for (std::size_t i = 0; i < n_; ++i) w[static_cast<std::size_t>(q)][i] = seed(q, i);
    std::uint64_t acc = 0;
    for (std::int64_t it = 0; it < iters_; ++it) {
      std::vector<std::uint64_t> first(static_cast<std::size_t>(p));
      for (int q = 0; q < p; ++q) first[static_cast<std::size_t>(q)] = w[static_cast<std::size_t>(q)][0];
      std::uint64_t sum = 0;
      for (int q = 0; q < p; ++q) {
        sum += advance(w[static_cast<std::size_t>(q)], q, it, first[static_cast<std::size_t>((q + p - 1) % p)]);
      }
      acc = acc * 31 + sum;
    }
    Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> aux("want", n_ / 8, 8);
    derive(w[static_cast<std::size_t>(r)], aux, iters_ - 1);

    std::string problems;
    if (std::memcmp(words_.data(), w[static_cast<std::size_t>(r)].data(), n_ * sizeof(std::uint64_t)) != 0) {
      problems += " words differ;";
    }
    if (std::memcmp(aux_.data(), aux.data(), aux.size() * sizeof(double)) != 0) problems += " aux differs;";
    if (acc_ != acc) problems += fmt::format(" acc {} != {};", acc_, acc);
    const auto& level = ctx.store().last_restore_level();
    if (!expect_level_.empty() && ctx.recoveries() > 0 && level != expect_level_) {
      problems += fmt::format(" last restore from {} (expected {});", level, expect_level_);
    }
    if (expect_recoveries_ >= 0 && ctx.recoveries() != expect_recoveries_) {
      problems += fmt::format(" {} recoveries (expected {});", ctx.recoveries(), expect_recoveries_);
    }
    if (expect_first_step_ >= 0 && ctx.role() == fx::Role::initial && first_step_ != expect_first_step_) {
      problems += fmt::format(" first step {} (expected {});", first_step_, expect_first_step_);
    }
    const int bad = ctx.comm().allreduce(problems.empty() ? 0 : 1, MPI_SUM);
    if (!problems.empty()) FX_THROW(fx::Error, fmt::format("rank {}:{}", r, problems));
    if (r == 0) {
      std::printf("data_store_ft_app: %d ranks, %d recoveries, last restore %s, first step %lld: state matches the "
                  "failure-free run bit for bit\n",
                  p, ctx.recoveries(), level.c_str(), static_cast<long long>(first_step_));
    }
    if (bad) FX_THROW(fx::Error, fmt::format("{} rank(s) do not match the failure-free run", bad));
  }

 private:
  void maybe_kill(const char* where, std::int64_t at) {
    for (const auto& k : kills_) {
      if (k.where != where || k.at != at) continue;
      if (k.rank >= 0 && k.rank != ctx_->rank()) continue;
      if (k.where != "restore" && ctx_->recoveries() != k.recoveries) continue;
      if (k.where == "job" && ctx_->rank() == 0) {
        fx::write_status(fx::ExitCode::aborted, "data_store_ft_app: killed the whole job on purpose");
      }
      std::fflush(nullptr);
      std::raise(SIGKILL);
    }
  }

  std::int64_t iters_ = 30;
  std::size_t n_ = 4096;
  std::string expect_level_;
  int expect_recoveries_ = -1;
  std::int64_t expect_first_step_ = -1;
  std::vector<Kill> kills_;
  fx::Context* ctx_ = nullptr;
  std::vector<std::uint64_t> words_;
  Kokkos::View<double**, Kokkos::LayoutLeft, Kokkos::HostSpace> aux_;
  std::uint64_t acc_ = 0;
  unsigned char probe_ = 0;
  std::int64_t next_ = 0;
  std::int64_t first_step_ = -1;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<StoreApp>(argc, argv); }
