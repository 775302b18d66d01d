#include "history_handover.hpp"

#include <fx/report_access.hpp>

#include <algorithm>
#include <string>

namespace fx::detail {
namespace {

// fx's own message on the world (the watch listens on kControlTag only).
constexpr int kHistoryTag = 0x0f10;

}  // namespace

void HistoryHandover::plan(const std::vector<Identity>& before, const std::vector<Identity>& after) {
  // The last plan's recipients may not have got their record (a failure
  // during the handover): every process treats them as recipients again.
  // Lookups by world rank keep this linear in the process count.
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  std::vector<char> was_active(static_cast<std::size_t>(world), 0);
  for (const auto& b : before) was_active[static_cast<std::size_t>(b.world_rank)] = b.logical >= 0 ? 1 : 0;
  for (int w : recipients_) was_active[static_cast<std::size_t>(w)] = 0;
  donor_ = -1;
  recipients_.clear();
  int donor_logical = -1;
  for (const auto& m : after) {
    if (m.logical < 0) continue;
    if (!was_active[static_cast<std::size_t>(m.world_rank)]) {
      recipients_.push_back(m.world_rank);
    } else if (donor_logical < 0 || m.logical < donor_logical) {
      donor_logical = m.logical;
      donor_ = m.world_rank;
    }
  }
  if (donor_ < 0) recipients_.clear();  // no survivor: nothing to hand over
  pending_ = !recipients_.empty();
}

void HistoryHandover::run(const Membership& m, Report& report,
                          const std::function<void(int rc, const char* call)>& check) {
  const bool donor = donor_ == m.world_rank();
  const bool recipient =
      std::find(recipients_.begin(), recipients_.end(), m.world_rank()) != recipients_.end();
  if (!pending_ || (!donor && !recipient)) return;
  pending_ = false;
  const MPI_Comm world = m.world();
  if (donor) {
    const std::string text = report.history_yaml();
    const unsigned long long size = text.size();
    for (int w : recipients_) {
      check(MPI_Send(&size, 1, MPI_UNSIGNED_LONG_LONG, m.rank_of(w), kHistoryTag, world),
            "MPI_Send (run record)");
      check(MPI_Send(text.data(), static_cast<int>(size), MPI_CHAR, m.rank_of(w), kHistoryTag, world),
            "MPI_Send (run record)");
    }
    return;
  }
  unsigned long long size = 0;
  const int from = m.rank_of(donor_);
  check(MPI_Recv(&size, 1, MPI_UNSIGNED_LONG_LONG, from, kHistoryTag, world, MPI_STATUS_IGNORE),
        "MPI_Recv (run record)");
  std::string text(size, '\0');
  check(MPI_Recv(text.data(), static_cast<int>(size), MPI_CHAR, from, kHistoryTag, world, MPI_STATUS_IGNORE),
        "MPI_Recv (run record)");
  ReportAccess::adopt_history(report, text);
}

}  // namespace fx::detail
