// A resilient app for DataStore::restore_resized under real kills
// (FX_INJECT) with recovery.on_exhausted: shrink and no spares. A global
// array of 64-bit words is split in blocks over the logical ranks; each
// word evolves pointwise (an LCG keyed to its global index and the
// iteration), and a global accumulator folds in their sum. After a shrink
// the app rebuilds its block for the new size from the old ranks' images
// that overlap it. finish() replays the failure-free run serially and
// compares every word and the accumulator bit for bit.
//
// Flags (after fx's own): --iters N --words G --expect-level memory|hdf5
//   --expect-size P (ranks at the end) --expect-resume IT (first iteration
//   after the last resize: the restored one, not 0)
//   --clean-dir (rank 0 empties the HDF5 directory first: repeatable runs)
//   --step-ms MS (each step sleeps that long: time for a host to be lost)
//   --resizable (the block is registered with fx::resizable, and each rank
//   keeps `marks`, the sorted global indices of its words picked so far:
//   every step drops some and picks some, so its length changes at every
//   step and on every rank; a shrink re-decomposes it by position, as a
//   particle code hands atoms to their new owners)
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

namespace {

constexpr std::uint64_t kMul = 6364136223846793005ULL;

struct Range {
  std::int64_t lo = 0, hi = 0;
};
// Block q of g words over p ranks; the first g % p blocks one word larger.
Range block(std::int64_t g, int p, int q) {
  const std::int64_t base = g / p, rem = g % p;
  const std::int64_t lo = q * base + std::min<std::int64_t>(q, rem);
  return {lo, lo + base + (q < rem ? 1 : 0)};
}

std::uint64_t advance(std::uint64_t w, std::int64_t g, std::int64_t it) {
  return w * kMul + static_cast<std::uint64_t>(it + 1) * static_cast<std::uint64_t>(g + 1);
}

// --resizable: one step of the marks of words [lo, lo + w.size()) (sorted):
// some go, the words whose top bits name this step join.
void update_marks(std::vector<std::int64_t>& marks, const std::vector<std::uint64_t>& w, std::int64_t lo,
                  std::int64_t it) {
  std::vector<std::int64_t> next;
  for (const auto g : marks)
    if ((g ^ it) % 7 != 0) next.push_back(g);
  for (std::size_t i = 0; i < w.size(); ++i) {
    if (static_cast<std::int64_t>(w[i] >> 58) == it % 64) next.push_back(lo + static_cast<std::int64_t>(i));
  }
  std::sort(next.begin(), next.end());
  next.erase(std::unique(next.begin(), next.end()), next.end());
  marks.swap(next);
}

class ResizeApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("data_store_resize_app");
    cli.add_option("--iters", iters_);
    cli.add_option("--words", words_);
    cli.add_option("--expect-level", expect_level_);
    cli.add_option("--expect-size", expect_size_);
    cli.add_option("--expect-resume", expect_resume_);
    cli.add_option("--step-ms", step_ms_);
    cli.add_flag("--resizable", resizable_);
    bool clean = false;
    cli.add_flag("--clean-dir", clean);
    fx_test::parse_app_args(cli, ctx);
    if (clean) fx_test::clean_checkpoint_dir(ctx);
    mine_ = block(words_, ctx.size(), ctx.rank());
    w_.assign(static_cast<std::size_t>(mine_.hi - mine_.lo), 0);
    marks_.clear();
    if (resizable_) {
      ctx.store().add("words", fx::resizable(w_));
      ctx.store().add("marks", fx::resizable(marks_));
    } else {
      ctx.store().add("words", w_);
    }
    ctx.store().add_scalar("acc", acc_);
    ctx.store().add_scalar("next", next_);
  }

  void initialize(fx::Context&) override {
    for (std::size_t i = 0; i < w_.size(); ++i)
      w_[i] = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(mine_.lo + static_cast<std::int64_t>(i));
    acc_ = 0;
    next_ = 0;
  }

  std::int64_t resize(fx::Context& ctx) override {
    setup(ctx);
    int old_size = 0;
    std::vector<std::uint64_t> accs;
    const auto v = ctx.store().restore_resized(
        [&](const fx::PriorVersion& pv) {
          old_size = pv.size;
          std::vector<int> need;
          for (int q = 0; q < pv.size; ++q) {
            const Range r = block(words_, pv.size, q);
            if (r.lo < mine_.hi && mine_.lo < r.hi) need.push_back(q);
          }
          return need;
        },
        [&](const fx::PriorPiece& piece) {
          const Range r = block(words_, old_size, piece.rank());
          std::size_t n = 0;
          const std::uint64_t* src = piece.data<std::uint64_t>("words", &n);
          if (static_cast<std::int64_t>(n) != r.hi - r.lo)
            FX_THROW(fx::Error, "old block has the wrong size");
          for (std::int64_t g = std::max(r.lo, mine_.lo); g < std::min(r.hi, mine_.hi); ++g) {
            w_[static_cast<std::size_t>(g - mine_.lo)] = src[g - r.lo];
          }
          if (resizable_) {
            const std::int64_t* marks = piece.data<std::int64_t>("marks", &n);
            for (std::size_t i = 0; i < n; ++i)
              if (marks[i] >= mine_.lo && marks[i] < mine_.hi) marks_.push_back(marks[i]);
          }
          accs.push_back(piece.scalar<std::uint64_t>("acc"));
          next_ = piece.scalar<std::int64_t>("next");
        });
    if (!v) {
      initialize(ctx);
      return 0;
    }
    if (std::adjacent_find(accs.begin(), accs.end(), std::not_equal_to<>()) != accs.end()) {
      FX_THROW(fx::Error, "old ranks disagree on the accumulator");
    }
    acc_ = accs.front();
    resumed_at_ = v->iteration;
    if (next_ != v->iteration) {
      FX_THROW(fx::Error,
               fmt::format("restored state is at iteration {}, the version at {}", next_, v->iteration));
    }
    return v->iteration;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    if (it != next_) FX_THROW(fx::Error, fmt::format("runtime iteration {}, state at {}", it, next_));
    std::uint64_t local = 0;
    for (std::size_t i = 0; i < w_.size(); ++i) {
      w_[i] = advance(w_[i], mine_.lo + static_cast<std::int64_t>(i), it);
      local += w_[i] >> 7;
    }
    acc_ = acc_ * 31 + ctx.comm().allreduce(local, MPI_SUM);
    if (resizable_) update_marks(marks_, w_, mine_.lo, it);
    next_ = it + 1;
    if (step_ms_ > 0) std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(step_ms_));
    return next_ >= iters_;
  }

  void finish(fx::Context& ctx) override {
    std::vector<std::uint64_t> w(static_cast<std::size_t>(words_));
    for (std::int64_t g = 0; g < words_; ++g)
      w[static_cast<std::size_t>(g)] = 0x9e3779b97f4a7c15ULL ^ static_cast<std::uint64_t>(g);
    std::uint64_t acc = 0;
    std::vector<std::int64_t> marks;  // the whole array's: marks depend on nothing but position
    for (std::int64_t it = 0; it < iters_; ++it) {
      std::uint64_t sum = 0;
      for (std::int64_t g = 0; g < words_; ++g) {
        auto& x = w[static_cast<std::size_t>(g)];
        x = advance(x, g, it);
        sum += x >> 7;
      }
      acc = acc * 31 + sum;
      if (resizable_) update_marks(marks, w, 0, it);
    }
    std::string problems;
    if (!std::equal(w_.begin(), w_.end(), w.begin() + mine_.lo)) problems += " words differ;";
    std::vector<std::int64_t> my_marks;
    for (const auto g : marks)
      if (g >= mine_.lo && g < mine_.hi) my_marks.push_back(g);
    if (marks_ != my_marks)
      problems += fmt::format(" marks differ ({} entries, {} expected);", marks_.size(), my_marks.size());
    if (acc_ != acc) problems += fmt::format(" acc {} != {};", acc_, acc);
    const auto& st = ctx.store().last_restore_stats();
    if (!expect_level_.empty() && fx::to_string(st.level) != expect_level_) {
      problems += fmt::format(" last restore from {} (expected {});", fx::to_string(st.level), expect_level_);
    }
    if (expect_size_ > 0 && ctx.size() != expect_size_) {
      problems += fmt::format(" {} ranks at the end (expected {});", ctx.size(), expect_size_);
    }
    if (expect_resume_ >= 0 && resumed_at_ != expect_resume_) {
      problems += fmt::format(" resumed at {} (expected {});", resumed_at_, expect_resume_);
    }
    fx_test::agree_verdict(ctx, problems);
    if (ctx.rank() == 0) {
      std::printf(
          "data_store_resize_app: %d ranks (checkpoint of %d), resumed at %lld from %s: every word matches "
          "the failure-free run bit for bit\n",
          ctx.size(), st.old_size, static_cast<long long>(resumed_at_),
          std::string(fx::to_string(st.level)).c_str());
    }
  }

 private:
  std::int64_t iters_ = 30;
  std::int64_t words_ = 100003;
  std::string expect_level_;
  int expect_size_ = 0;
  std::int64_t expect_resume_ = -1;
  Range mine_;
  std::vector<std::uint64_t> w_;
  bool resizable_ = false;
  std::vector<std::int64_t> marks_;
  std::uint64_t acc_ = 0;
  std::int64_t next_ = 0;
  std::int64_t resumed_at_ = -1;
  double step_ms_ = 0;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<ResizeApp>(argc, argv); }
