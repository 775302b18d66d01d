#pragma once
// The run record travels to the spares a repair recruited (any active rank
// may write the report at the end): the surviving active rank with the
// lowest logical rank sends them its whole record once every active rank
// has completed its first step after the repair.
#include <fx/report.hpp>

#include <functional>
#include <vector>

#include "membership.hpp"

namespace fx::detail {

class HistoryHandover {
 public:
  // After a repair, on every process alike: who sends, who receives.
  void plan(const std::vector<Identity>& before, const std::vector<Identity>& after);
  // This process's part, once per plan, after the first step (every rank's
  // collectives of that step are done, so none waits on the handover).
  // `check` turns a failed MPI call's code into the failure handling.
  void run(const Membership& m, Report& report, const std::function<void(int rc, const char* call)>& check);

 private:
  int donor_ = -1;  // world rank (-1: none)
  std::vector<int> recipients_;
  bool pending_ = false;  // this process has not done its part yet
};

}  // namespace fx::detail
