#include <fx_test/app_support.hpp>

#include <filesystem>

namespace fx_test {

void parse_app_args(CLI::App& cli, const fx::Context& ctx) {
  std::vector<std::string> args(ctx.args().rbegin(), ctx.args().rend() - 1);  // CLI11 wants them reversed
  cli.parse(args);
}

void clean_checkpoint_dir(const fx::Context& ctx) {
  if (ctx.rank() == 0 && ctx.role() == fx::Role::initial && ctx.recoveries() == 0) {
    std::filesystem::remove_all(ctx.fx_config().checkpoint.hdf5.directory);
  }
}

std::uint64_t ring_seed(int rank, std::size_t i) { return 1000003ULL * static_cast<std::uint64_t>(rank) + i; }

std::uint64_t ring_advance(std::vector<std::uint64_t>& words, int rank, std::int64_t it,
                           std::uint64_t from_left, std::uint64_t* sum) {
  constexpr std::uint64_t kMul = 6364136223846793005ULL;
  std::uint64_t local = 0, plain = 0;
  for (auto& x : words) {
    x = x * kMul + static_cast<std::uint64_t>(it + 1) * static_cast<std::uint64_t>(rank + 1) + from_left;
    local += x >> 7;
    plain += x;
  }
  if (sum != nullptr) *sum = plain;
  return local;
}

std::uint64_t ring_fold(std::uint64_t acc, const std::vector<std::uint64_t>& contributions) {
  std::uint64_t sum = 0;
  for (auto c : contributions) sum += c;
  return acc * 31 + sum;
}

RingReplay ring_replay(int p, std::size_t n, std::int64_t iters, const RingReplayOptions& options) {
  const auto np = static_cast<std::size_t>(p);
  RingReplay out;
  out.words.assign(np, std::vector<std::uint64_t>(n));
  for (std::size_t r = 0; r < np; ++r)
    for (std::size_t i = 0; i < n; ++i) out.words[r][i] = ring_seed(static_cast<int>(r), i);
  std::vector<std::uint64_t> first(np), contributions(np);
  for (std::int64_t it = 0; it < iters; ++it) {
    std::fill(contributions.begin(), contributions.end(), 0);
    if (it != options.skipped) {
      for (std::size_t r = 0; r < np; ++r) first[r] = out.words[r][0];
      for (std::size_t r = 0; r < np; ++r) {
        contributions[r] = ring_advance(out.words[r], static_cast<int>(r), it, first[(r + np - 1) % np]);
        if (options.after_step) options.after_step(r, it, out.words[r]);
      }
    }
    out.acc = options.fold(out.acc, contributions);
  }
  return out;
}

void agree_verdict(const fx::Context& ctx, const std::string& problems) {
  const int bad = ctx.comm().allreduce(problems.empty() ? 0 : 1, MPI_SUM);
  if (!problems.empty()) FX_THROW(fx::Error, fmt::format("rank {}:{}", ctx.rank(), problems));
  if (bad) FX_THROW(fx::Error, fmt::format("{} rank(s) do not match the failure-free run", bad));
}

}  // namespace fx_test
