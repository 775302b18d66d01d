#pragma once
// What the multi-rank test apps (tests/mpi/*/*_app.cpp) share: reading
// their own flags, the ring model several of them compute, its serial
// failure-free replay (their answers are checked against it bit for bit),
// and the verdict every rank agrees on.
#include <fx/fx.hpp>

#include <CLI/CLI.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace fx_test {

// Parses the app's own flags (ctx.args() after the program name) into `cli`.
void parse_app_args(CLI::App& cli, const fx::Context& ctx);

// --clean-dir: logical rank 0 of a fresh job empties the HDF5 checkpoint
// directory in setup(), before any checkpoint exists, so runs repeat.
void clean_checkpoint_dir(const fx::Context& ctx);

// The ring model: rank r's n words start at ring_seed(r, i); each step every
// rank updates its words with an LCG keyed to rank and iteration, fed by its
// left neighbour's first word, and contributes the sum of (word >> 7).
std::uint64_t ring_seed(int rank, std::size_t i);
// One rank's update; returns its contribution. `sum`, if given, gets the
// new words' plain sum (for ABFT checks).
std::uint64_t ring_advance(std::vector<std::uint64_t>& words, int rank, std::int64_t it,
                           std::uint64_t from_left, std::uint64_t* sum = nullptr);
// The default accumulator: acc * 31 + the sum of the ranks' contributions.
std::uint64_t ring_fold(std::uint64_t acc, const std::vector<std::uint64_t>& contributions);

// The failure-free ring run on p ranks, serially.
struct RingReplay {
  std::vector<std::vector<std::uint64_t>> words;  // each rank's final words
  std::uint64_t acc = 0;
};
struct RingReplayOptions {
  // acc after an iteration, from acc before it and the ranks' contributions.
  std::function<std::uint64_t(std::uint64_t, const std::vector<std::uint64_t>&)> fold = ring_fold;
  // An iteration that changed nothing (all contributions 0), or -1.
  std::int64_t skipped = -1;
  // Called after rank r's words advanced in iteration `it` (state an app
  // derives from them, replayed alongside).
  std::function<void(std::size_t r, std::int64_t it, const std::vector<std::uint64_t>& words)> after_step;
};
RingReplay ring_replay(int p, std::size_t n, std::int64_t iters, const RingReplayOptions& options = {});

// Every rank's verdict: throws on a rank whose `problems` is not empty
// (naming it), and on every other rank when some rank had problems.
void agree_verdict(const fx::Context& ctx, const std::string& problems);

}  // namespace fx_test
