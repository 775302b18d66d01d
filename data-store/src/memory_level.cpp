// The memory level: every rank's own image and the redundancy it keeps for
// others (a buddy's copy or a parity block; redundancy.cpp). A restore
// reads the one version restore()'s plan chose from the inventories.
#include <fx/clock.hpp>
#include <fx/log.hpp>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "level.hpp"

namespace fx::detail {
namespace {

class MemoryLevel final : public Level {
 public:
  explicit MemoryLevel(LevelContext& ctx) : ctx_(ctx) {}
  CheckpointLevel id() const override { return CheckpointLevel::memory; }
  const char* name() const override { return "memory"; }
  double& seconds(CheckpointStats& st) const override { return st.memory_seconds; }
  bool storage() const override { return false; }
  bool on() const override { return true; }

  bool due(std::int64_t) const override { return true; }
  bool publish(Slot& s, const KeepContext&, const std::string&) override { return ctx_.protect(s); }

  bool reads(const RestoreFacts& f) const override { return !f.plan.fresh; }
  void open(const RestoreFacts& f) override {
    f_ = &f;
    tried_ = false;
    // Resumed from storage at another size: memory holds nothing of this
    // size yet, by design (restore_from_levels resizes the stored one).
    if (f.plan.iteration < 0 && f.plan.history && !f.plan.resized_pending && ctx_.rank() == 0) {
      log::warn(
          "in-memory checkpoints lost: no version survived for logical rank(s) {} (a rank failed together "
          "with the rank(s) holding its redundancy); {}",
          f.plan.unrecoverable, ctx_.below_memory());
    }
  }
  std::int64_t next() const override { return tried_ || f_ == nullptr ? -1 : f_->plan.iteration; }
  bool load() override;
  void set_aside_above(std::int64_t iteration) override { ctx_.drop_above(iteration); }
  void read_prior(const StoredPrior& p, const PriorRequest& r, PriorPieces& pieces) override {
    ctx_.fetch_prior(p, r, pieces);
  }
  bool lost(std::vector<int>& ranks) const override {
    if (f_ == nullptr || !f_->plan.history) return false;
    ranks = f_->plan.unrecoverable;
    return true;
  }

 private:
  LevelContext& ctx_;
  const RestoreFacts* f_ = nullptr;  // the restore under way
  bool tried_ = false;
};

bool MemoryLevel::load() {
  tried_ = true;
  const RestorePlan& plan = f_->plan;
  f_->fault(StorePoint::restore_load);
  if (!ctx_.restore_memory(plan)) {
    if (ctx_.rank() == 0)
      log::warn("in-memory version of iteration {} failed its checks; {}", plan.iteration,
                ctx_.below_memory());
    return false;
  }
  ctx_.set_committed(plan.iteration, plan.sequence);
  int pulled = 0;
  for (const auto& rp : plan.ranks) pulled += rp.source != Source::own;
  log::info("restored iteration {} from memory ({} of {} ranks from {}) in {:.2f} ms", plan.iteration, pulled,
            ctx_.size(), ctx_.parity() ? "parity" : "buddies", (now() - f_->t0) * 1e3);
  return true;
}

}  // namespace

std::unique_ptr<Level> memory_level(LevelContext& ctx, const CheckpointConfig&) {
  return std::make_unique<MemoryLevel>(ctx);
}

}  // namespace fx::detail
