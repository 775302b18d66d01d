#include <fx/comm.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>

namespace fx {

Comm::Comm(MPI_Comm raw, detail::FailureHandler* handler) : raw_(raw), handler_(handler) {}

int Comm::rank() const {
  int r = -1;
  MPI_Comm_rank(raw_, &r);
  return r;
}

int Comm::size() const {
  int s = 0;
  MPI_Comm_size(raw_, &s);
  return s;
}

void Comm::check(int rc, const char* call, const char* file, int line) const {
  if (rc == MPI_SUCCESS) return;
  if (ulfm::is_failure(rc)) {
    std::vector<int> failed;
    ulfm::get_failed(raw_, failed);
    if (handler_) handler_->on_failure(raw_, rc, call);
    throw ProcessFailure(fmt::format("{} returned {}", call, ulfm::error_name(rc)), std::move(failed), file,
                         line);
  }
  throw MpiError(fmt::format("{} ({})", call, ulfm::error_name(rc)), rc, file, line);
}

void Comm::wait(Request& r) const {
  check(MPI_Wait(&r.req_, MPI_STATUS_IGNORE), "MPI_Wait", __FILE__, __LINE__);
}

void Comm::wait_all(std::vector<Request>& rs) const {
  for (auto& r : rs) wait(r);
}

void Comm::barrier() const { check(MPI_Barrier(raw_), "MPI_Barrier", __FILE__, __LINE__); }

int Comm::agree(int flag) const {
  check(ulfm::agree(raw_, &flag), "MPIX_Comm_agree", __FILE__, __LINE__);
  return flag;
}

}  // namespace fx
