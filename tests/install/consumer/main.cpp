// An application built against the installed package only (<fx/fx.hpp>,
// fx::fx) and run through the installed launcher (bin/fx-run): a ring of
// ranks, each step a neighbour exchange and an allreduce, with its state
// checkpointed in memory. The answer must not depend on failures. Its
// `app: steps` is read through fx::ConfigSection (ctx.config()); with
// `app: exit_at` logical rank 1 leaves by _exit(7) at that step.
#include <fx/fx.hpp>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <vector>

namespace {

class Ring : public fx::ResilientApp {
 public:
  static std::vector<std::string> config_keys() { return {"steps", "exit_at"}; }

  void setup(fx::Context& ctx) override {
    steps_ = ctx.config().get<std::int64_t>("steps", 40);
    exit_at_ = ctx.config().get<std::int64_t>("exit_at", -1);
    data_.assign(64, 0);
    ctx.store().add("data", data_);
    ctx.store().add_scalar("sum", sum_);
  }
  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < data_.size(); ++i)
      data_[i] = static_cast<std::uint64_t>(ctx.rank()) * 1000 + i;
    sum_ = 0;
  }
  bool step(fx::Context& ctx, std::int64_t it) override {
    const int r = ctx.rank(), p = ctx.size();
    if (it == exit_at_ && r == 1) _exit(7);  // no exit handler runs: only PMIx tells the others
    std::uint64_t left = 0;
    ctx.comm().sendrecv(&data_[0], 1, (r + 1) % p, &left, 1, (r + p - 1) % p, 3);
    for (auto& x : data_) x = x * 6364136223846793005ULL + left + static_cast<std::uint64_t>(it);
    sum_ = sum_ * 31 + ctx.comm().allreduce(data_[1], MPI_SUM);
    return it + 1 >= steps_;
  }
  void finish(fx::Context& ctx) override {
    if (ctx.rank() == 0) {
      std::printf("fx consumer: %d ranks, %lld steps, %d recoveries, sum %llu\n", ctx.size(),
                  static_cast<long long>(steps_), ctx.recoveries(), static_cast<unsigned long long>(sum_));
      ctx.report().set_result("sum", sum_);
    }
  }

 private:
  std::int64_t steps_ = 40;
  std::int64_t exit_at_ = -1;
  std::vector<std::uint64_t> data_;
  std::uint64_t sum_ = 0;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<Ring>(argc, argv); }
