// A self-checking TryBlock app. Each iteration runs one block "ring": a
// neighbour exchange through the scope, an update of the rank's words, and
// an ABFT check (the words' sum computed during the update must equal the
// sum read back afterwards; a bit flip in between breaks it). Then acc folds
// in a global sum. Rank 0 replays the failure-free run serially.
//
// --scenario picks what goes wrong (see check_log); at the end every rank
// checks its own TryBlock log against the scenario, and rank 0 checks that
// every rank present from the start has the same log, bit for bit.
#include <fx/fx.hpp>
#include <fx_test/app_support.hpp>

#include <time.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "same_log.hpp"

namespace {

using fx::TryError;
using Errors = std::vector<fx::TryRankError>;

struct Options {
  std::string scenario = "none";
  std::int64_t iters = 20;
  std::size_t n = 256;
};

std::uint64_t words_sum(const std::vector<std::uint64_t>& d) {
  std::uint64_t s = 0;
  for (auto x : d) s += x;
  return s;
}

void sleep_s(double s) {
  timespec ts{static_cast<time_t>(s),
              static_cast<long>((s - static_cast<double>(static_cast<time_t>(s))) * 1e9)};
  nanosleep(&ts, nullptr);
}

[[noreturn]] void fail(const std::string& what) { FX_THROW(fx::Error, "tryblock_app: " + what); }

void expect(bool ok, const std::string& what, const fx::TryOutcome& o) {
  if (!ok) fail(what + " (outcome: " + o.describe() + ")");
}

class TryApp : public fx::ResilientApp {
 public:
  void setup(fx::Context& ctx) override {
    CLI::App cli("tryblock_app");
    cli.add_option("--scenario", opt_.scenario);
    cli.add_option("--iters", opt_.iters);
    cli.add_option("--n", opt_.n);
    fx_test::parse_app_args(cli, ctx);
    data_.assign(opt_.n, 0);
    ctx.store().add("data", data_);
    ctx.store().add_scalar("acc", acc_);
    half_ = ctx.split(ctx.rank() % 2, ctx.rank());
  }

  void initialize(fx::Context& ctx) override {
    for (std::size_t i = 0; i < data_.size(); ++i) data_[i] = fx_test::ring_seed(ctx.rank(), i);
    acc_ = 0;
  }

  bool step(fx::Context& ctx, std::int64_t it) override {
    const int r = ctx.rank(), p = ctx.size();
    const std::string& sc = opt_.scenario;
    std::uint64_t local = 0;
    const auto ring = [&](fx::TryScope& t) {
      std::uint64_t left = 0;
      t.irecv(&left, 1, (r + p - 1) % p, 0);
      t.isend(&data_[0], 1, (r + 1) % p, 0);
      if (!t.wait()) return;
      if (sc == "timeout" && it == 8 && r == 2 && t.attempt() == 1)
        sleep_s(ctx.fx_config().tryblock.timeout_s + 1);
      std::uint64_t sum = 0;
      local = fx_test::ring_advance(data_, r, it, left, &sum);
      ctx.fault_point(fx::Phase::halo);  // kills and bit flips land inside the body
      if (words_sum(data_) != sum) t.raise_error(TryError::incorrect_result);
      if (it == 5 && t.attempt() == 1) {
        if (sc == "assert_one" && r == 2) t.raise_error(TryError::incorrect_result);
        if (sc == "assert_two" && r == 1) t.raise_error(TryError::incorrect_result);
        if (sc == "assert_two" && r == 3) t.raise_error(TryError::user_assertion);
      }
      if (it == 12 && r == 1 && ((sc == "exhaust" && ctx.recoveries() == 0) || sc == "persistent"))
        t.raise_error(TryError::incorrect_result);
      if (sc == "nested" && it == 6) nested(t, ctx);
      // Errors no retry can fix: the job ends with them, not a retry.
      if (sc == "throw_std" && it == 7 && r == 2)
        throw std::runtime_error("tryblock_app: a std::runtime_error");
      if (sc == "throw_usage" && it == 7 && r == 1) FX_THROW(fx::UsageError, "tryblock_app: a usage error");
    };
    fx::TryOptions options;
    if (sc == "admission") {
      options.sync_admission = true;
      // Arrive late once: the others give up waiting at admission.
      if (it == 8 && r == 2 && ctx.recoveries() == 0 && !late_) {
        late_ = true;
        sleep_s(ctx.fx_config().tryblock.timeout_s + 1);
      }
    }
    try {
      const fx::TryOutcome o = ctx.try_block("ring", ring, options);
      expect(o.committed && o.action == fx::TryAction::committed,
             "a top-level block returned without committing", o);
    } catch (const fx::TryBlockAborted& e) {
      // The policy gave up: the block's work is gone (data as at admission),
      // the iteration contributes nothing, on every rank alike.
      if (sc != "persistent" || it != 12) throw;
      local = 0;
      aborted_at_ = it;
    }
    acc_ = acc_ * 31 + ctx.comm().allreduce(local, MPI_SUM);
    return it + 1 >= opt_.iters;
  }

  void finish(fx::Context& ctx) override {
    const auto& log = fx::try_log(ctx);
    if (ctx.role() != fx::Role::recovered) check_log(log);
    const std::string text = tryblock_test::check_same_log(ctx);
    if (ctx.rank() != 0) return;
    const std::uint64_t want = replay(ctx.size());
    std::printf(
        "tryblock_app: scenario %s, recoveries %d, %zu logged outcome(s), acc %llu, expected %llu\n%s",
        opt_.scenario.c_str(), ctx.recoveries(), log.size(), static_cast<unsigned long long>(acc_),
        static_cast<unsigned long long>(want), text.c_str());
    if (acc_ != want) fail("acc " + std::to_string(acc_) + " != failure-free " + std::to_string(want));
  }

 private:
  // Deferred blocks and a nested block over a subgroup, with an inner abort.
  void nested(fx::TryScope& t, fx::Context& ctx) {
    const int r = ctx.rank();
    const int outer = t.attempt();
    t.defer("d1", [&](fx::TryScope& d) {
      if (r == 0 && outer == 1) d.raise_error(TryError::user_assertion);
    });
    t.defer("d2", [&](fx::TryScope& d) {
      int token = r, got = -1;
      d.irecv(&got, 1, (d.rank() + d.size() - 1) % d.size(), 3);
      d.isend(&token, 1, (d.rank() + 1) % d.size(), 3);
      d.wait();
    });
    fx::TryOptions once;
    once.soft_retries = 1;
    const fx::TryOutcome in = t.try_block(
        "half", half_,
        [&](fx::TryScope& h) {
          int token = h.rank(), got = -1;
          h.irecv(&got, 1, (h.rank() + h.size() - 1) % h.size(), 1);
          h.isend(&token, 1, (h.rank() + 1) % h.size(), 1);
          h.wait();
          if (h.rank() == 1 && outer == 1) h.raise_error(TryError::incorrect_result);
        },
        once);
    const bool ok = outer == 1 ? !in.committed && in.attempts == 2 && in.action == fx::TryAction::aborted &&
                                     in.errors == Errors{{1, TryError::incorrect_result}}
                               : in.committed && in.attempts == 1;
    expect(ok, "nested block 'half' on outer attempt " + std::to_string(outer), in);
  }

  // The scenario's TryBlock log, as every original rank must see it.
  void check_log(const std::vector<fx::TryOutcome>& log) const {
    const std::string& sc = opt_.scenario;
    const auto one = [&](std::size_t want) {
      if (log.size() != want)
        fail(sc + ": " + std::to_string(log.size()) + " logged outcome(s), expected " + std::to_string(want));
    };
    const auto retried = [&](const Errors& first) {
      one(1);
      const auto& o = log[0];
      expect(o.committed && o.attempts == 2 && o.history.size() == 1 && o.history[0] == first,
             sc + ": expected a commit on the second attempt", o);
    };
    if (sc == "none") {
      one(0);
    } else if (sc == "assert_one") {
      retried({{2, TryError::incorrect_result}});
    } else if (sc == "assert_two") {
      retried({{1, TryError::incorrect_result}, {3, TryError::user_assertion}});
    } else if (sc == "bitflip") {
      retried({{2, TryError::incorrect_result}});
    } else if (sc == "timeout" || sc == "admission") {
      retried({{2, TryError::timeout}});
    } else if (sc == "kill_body" || sc == "kill_commit") {
      one(1);
      const int victim = sc == "kill_body" ? 2 : 1;
      expect(log[0].action == fx::TryAction::recovery &&
                 log[0].errors == Errors{{victim, TryError::process_failure}},
             sc + ": expected recovery after a process failure of rank " + std::to_string(victim), log[0]);
    } else if (sc == "exhaust" || sc == "persistent") {
      one(sc == "exhaust" ? 1 : 2);
      const Errors e{{1, TryError::incorrect_result}};
      for (std::size_t i = 0; i < log.size(); ++i) {
        const auto& o = log[i];
        expect(o.action == (i == 0 ? fx::TryAction::rollback : fx::TryAction::abort) && o.attempts == 3 &&
                   o.errors == e && o.history == std::vector<Errors>{e, e},
               sc + ": expected soft retries exhausted, then " + (i == 0 ? "a rollback" : "an abort"), o);
      }
    } else if (sc == "nested") {
      retried(
          {{0, TryError::user_assertion}, {2, TryError::incorrect_result}, {3, TryError::incorrect_result}});
      const auto& in = log[0].inner;
      const bool ok = in.size() == 3 && in[0].name == "half" && in[1].name == "d1" && in[2].name == "d2" &&
                      in[0].committed && in[1].committed && in[2].committed;
      expect(ok, "nested: the committed attempt should list half, d1, d2, all committed", log[0]);
    } else {
      fail("unknown scenario '" + sc + "'");
    }
  }

  // The failure-free run on p ranks, serially (an aborted iteration adds 0
  // and leaves the words as they were).
  std::uint64_t replay(int p) const {
    fx_test::RingReplayOptions options;
    options.skipped = aborted_at_;
    return fx_test::ring_replay(p, opt_.n, opt_.iters, options).acc;
  }

  Options opt_;
  std::vector<std::uint64_t> data_;
  std::uint64_t acc_ = 0;
  fx::Comm half_;
  std::int64_t aborted_at_ = -1;
  bool late_ = false;
};

}  // namespace

int main(int argc, char** argv) { return fx::run<TryApp>(argc, argv); }
