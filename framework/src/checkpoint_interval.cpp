#include "checkpoint_interval.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fx::detail {

double daly_interval_s(double commit_s, double mtbf_s) {
  const double d = std::max(commit_s, 0.0);
  if (d >= 2 * mtbf_s) return mtbf_s;
  const double x = d / (2 * mtbf_s);
  return std::sqrt(2 * d * mtbf_s) * (1 + std::sqrt(x) / 3 + x / 9) - d;
}

double expected_waste(double tau_s, double commit_s, double mtbf_s) {
  const double period = tau_s + commit_s;
  return std::min(1.0, commit_s / period + period / (2 * mtbf_s));
}

double mtbf_estimate_s(double mtbf_s, int failures, double elapsed_s) {
  return (mtbf_s + elapsed_s) / (1 + failures);
}

CheckpointInterval::CheckpointInterval(int every, bool automatic, double mtbf_s)
    : automatic_(automatic), mtbf_s_(mtbf_s), every_(automatic ? 0 : every) {}

bool CheckpointInterval::due(std::int64_t iteration) const {
  if (!automatic_) return every_ > 0 && iteration % every_ == 0;
  return iteration >= next_;
}

CheckpointInterval::Choice CheckpointInterval::committed(std::int64_t iteration, const Measured& m) {
  const double mtbf = mtbf_estimate_s(mtbf_s_, m.failures, m.elapsed_s);
  const double tau = daly_interval_s(m.commit_s, mtbf);
  // At least one step; a step time of 0 (a clock tick) means "many".
  const double steps = m.step_s > 0 ? tau / m.step_s : std::numeric_limits<int>::max();
  every_ = static_cast<int>(std::clamp(std::round(steps), 1.0, std::numeric_limits<int>::max() / 2.0));
  next_ = iteration + every_;
  return {every_, m.commit_s, m.step_s, mtbf, expected_waste(every_ * m.step_s, m.commit_s, mtbf)};
}

void CheckpointInterval::resumed(std::int64_t iteration, int every) {
  if (!automatic_) return;
  every_ = every;
  next_ = iteration + std::max(every, 1);
}

}  // namespace fx::detail
