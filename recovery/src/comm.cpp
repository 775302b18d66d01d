#include <fx/comm.hpp>
#include <fx/recovery/ulfm.hpp>

#include <fmt/format.h>
#include <sched.h>

namespace fx {

Comm::Comm(MPI_Comm raw, detail::FailureHandler* handler)
    : slot_(std::make_shared<detail::CommSlot>(detail::CommSlot{raw, handler})) {}

int Comm::rank() const {
  int r = -1;
  MPI_Comm_rank(raw(), &r);
  return r;
}

int Comm::size() const {
  int s = 0;
  MPI_Comm_size(raw(), &s);
  return s;
}

void Comm::check(int rc, const char* call, const char* file, int line) const {
  if (rc == MPI_SUCCESS) return;
  if (ulfm::is_failure(rc)) {
    std::vector<int> failed;
    ulfm::get_failed(raw(), failed);
    if (auto* h = handler()) h->on_failure(raw(), rc, call);
    throw ProcessFailure(fmt::format("{} returned {}", call, ulfm::error_name(rc)), std::move(failed), file,
                         line);
  }
  throw MpiError(fmt::format("{} at {}:{} ({})", call, file, line, ulfm::error_name(rc)), rc, file, line);
}

void Comm::wait(Request& r, CallSite site) const {
  check(MPI_Wait(&r.req_, MPI_STATUS_IGNORE), "MPI_Wait", site.file, site.line);
}

void Comm::wait_all(std::vector<Request>& rs, CallSite site) const {
  for (auto& r : rs) wait(r, site);
}

void Comm::barrier(CallSite site) const { check(MPI_Barrier(raw()), "MPI_Barrier", site.file, site.line); }

void check_mpi(MPI_Comm comm, int rc, const char* call, CallSite site) {
  if (rc == MPI_SUCCESS) return;
  if (ulfm::is_failure(rc)) {
    ulfm::revoke(comm);
    throw ProcessFailure(
        fmt::format("{} at {}:{} returned {}", call, site.file, site.line, ulfm::error_name(rc)), {},
        site.file, site.line);
  }
  throw MpiError(fmt::format("{} at {}:{} ({})", call, site.file, site.line, ulfm::error_name(rc)), rc,
                 site.file, site.line);
}

namespace detail {
void throw_count_too_large(const char* call, std::size_t count, const char* type, CallSite site) {
  throw UsageError(
      fmt::format("{}:{}: fx::Comm: {} of {} {} refused: MPI counts are int, at most {}; split the "
                  "message",
                  site.file, site.line, call, count, type, INT_MAX),
      site.file, site.line);
}
}  // namespace detail

int Comm::agree(int flag) const {
  // A revoke does not interrupt an agreement: leave it when a repair
  // started elsewhere (the ranks it waits for may be in that repair).
  detail::FailureHandler* h = handler();
  const ulfm::Agreement a = ulfm::agree_polled(raw(), flag, [h] {
    if (h && h->interrupted()) return false;
    sched_yield();  // oversubscribed nodes: let the peers we wait for run
    return true;
  });
  if (a.rc != MPI_SUCCESS) check(a.rc, "MPIX_Comm_iagree", __FILE__, __LINE__);
  if (a.abandoned) {
    if (h) h->on_failure(raw(), MPI_ERR_OTHER, "MPIX_Comm_iagree");
    throw ProcessFailure("agreement left: a repair started elsewhere", {}, __FILE__, __LINE__);
  }
  return a.flag;
}

}  // namespace fx
