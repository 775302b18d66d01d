#pragma once
// When the step loop commits: every k iterations, or with
// `checkpoint.memory.every: auto` an interval chosen from the measured
// commit cost and step time and the job's MTBF by Daly's formula, adjusted
// after every commit. Every input is agreed over the active ranks first, so
// every rank picks the same iterations.
#include <cstdint>
#include <optional>

namespace fx::detail {

// Daly's optimum compute time between checkpoints (seconds) for a commit
// cost and an MTBF: sqrt(2 d M) (1 + sqrt(d / 2M) / 3 + d / 18M) - d when
// d < 2M, else M (J. T. Daly, FGCS 22(3), 2006; first order: Young 1974).
double daly_interval_s(double commit_s, double mtbf_s);
// The expected fraction of the run lost to checkpoints and re-computation
// at interval tau: d / (tau + d) + (tau + d) / 2M (first order).
double expected_waste(double tau_s, double commit_s, double mtbf_s);
// The MTBF to use after `failures` in `elapsed_s`, with `mtbf_s` counted
// as one failure's worth of prior exposure.
double mtbf_estimate_s(double mtbf_s, int failures, double elapsed_s);

class CheckpointInterval {
 public:
  // One auto choice, as measured and reported.
  struct Choice {
    int every = 0;
    double commit_s = 0, step_s = 0, mtbf_s = 0, waste = 0;
  };
  // What all active ranks agreed on at a commit (maxima).
  struct Measured {
    double commit_s = 0, step_s = 0, elapsed_s = 0;
    int failures = 0;
  };

  CheckpointInterval(int every, bool automatic, double mtbf_s);
  bool automatic() const { return automatic_; }
  // The step loop reached `iteration` (steps done): commit now?
  bool due(std::int64_t iteration) const;
  // After a commit at `iteration` (auto only): the next interval.
  Choice committed(std::int64_t iteration, const Measured& m);
  // The loop resumes at `iteration` with `every` (agreed: a recovered
  // rank's own is 0).
  void resumed(std::int64_t iteration, int every);
  int every() const { return every_; }

 private:
  bool automatic_;
  double mtbf_s_;
  int every_;  // auto: the current interval (0: the first commit comes after the first step)
  std::int64_t next_ = 1;
};

}  // namespace fx::detail
