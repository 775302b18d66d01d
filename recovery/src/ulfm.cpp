#include <fx/recovery/ulfm.hpp>

#include "fx_ulfm_config.hpp"
#if FX_HAVE_ULFM
#include <mpi-ext.h>
#endif

#include <csignal>
#include <cstdlib>
#include <memory>
#include <numeric>

namespace fx::ulfm {

void prepare_process() { std::signal(SIGPIPE, SIG_IGN); }

std::string thread_level_shortfall(int provided) {
  if (provided >= kThreadLevel) return "";
  const char* names[] = {"MPI_THREAD_SINGLE", "MPI_THREAD_FUNNELED", "MPI_THREAD_SERIALIZED",
                         "MPI_THREAD_MULTIPLE"};
  const bool known = provided >= MPI_THREAD_SINGLE && provided <= MPI_THREAD_MULTIPLE;
  return std::string("the MPI library gives thread level ") +
         (known ? names[provided - MPI_THREAD_SINGLE] : std::to_string(provided)) +
         "; fx needs MPI_THREAD_FUNNELED (its copier thread and the Kokkos backend's threads run beside "
         "the main thread, which alone calls MPI)";
}

std::string orphaned_world(int world_size) {
  const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (launched == nullptr || std::atoi(launched) == world_size) return "";
  return std::string("mpiexec started this process as one of ") + launched +
         ", but MPI_Init gave it a world of " + std::to_string(world_size) +
         ": its mpiexec is gone; leaving without a verdict (the launcher's stands)";
}

bool thread_multiple() {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  return provided == MPI_THREAD_MULTIPLE;
}

namespace {

// maybe_unused: pass-through mode (no ULFM) needs neither helper.
[[maybe_unused]] std::vector<int> group_ranks_in(MPI_Group group, MPI_Comm comm) {
  int n = 0;
  MPI_Group_size(group, &n);
  std::vector<int> in(static_cast<std::size_t>(n)), out(static_cast<std::size_t>(n));
  std::iota(in.begin(), in.end(), 0);
  MPI_Group comm_group;
  MPI_Comm_group(comm, &comm_group);
  if (n > 0) MPI_Group_translate_ranks(group, n, in.data(), comm_group, out.data());
  MPI_Group_free(&comm_group);
  return out;
}

[[maybe_unused]] int error_class(int rc) {
  int cls = rc;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  return cls;
}

}  // namespace

#if FX_HAVE_ULFM

bool compiled() { return true; }

bool active() {
  int* value = nullptr;
  int flag = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPIX_FT, &value, &flag);
  return flag && value && *value;
}

bool is_proc_failed(int rc) {
  const int cls = error_class(rc);
  return cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_PROC_FAILED_PENDING;
}
bool is_revoked(int rc) { return error_class(rc) == MPIX_ERR_REVOKED; }
bool is_pending(int rc) { return error_class(rc) == MPIX_ERR_PROC_FAILED_PENDING; }

int revoke(MPI_Comm comm) { return MPIX_Comm_revoke(comm); }
int shrink(MPI_Comm comm, MPI_Comm* newcomm) { return MPIX_Comm_shrink(comm, newcomm); }
int agree(MPI_Comm comm, int* flag) { return MPIX_Comm_agree(comm, flag); }
int iagree(MPI_Comm comm, int* flag, MPI_Request* request) { return MPIX_Comm_iagree(comm, flag, request); }

// The failed processes of comm this process knows of, acknowledged first
// when `ack` (Open MPI 5: MPIX_Comm_ack_failed/get_failed; older ULFM:
// failure_ack/get_acked, which always acknowledges).
static int failed_ranks(MPI_Comm comm, bool ack, std::vector<int>& failed) {
  MPI_Group group = MPI_GROUP_NULL;
#if FX_HAVE_MPIX_COMM_ACK_FAILED
  int rc = MPI_SUCCESS;
  if (ack) {
    int size = 0, acked = 0;
    MPI_Comm_size(comm, &size);
    rc = MPIX_Comm_ack_failed(comm, size, &acked);  // size >= failures: ack all
  }
  if (rc == MPI_SUCCESS) rc = MPIX_Comm_get_failed(comm, &group);
#else
  (void)ack;
  int rc = MPIX_Comm_failure_ack(comm);
  if (rc == MPI_SUCCESS) rc = MPIX_Comm_failure_get_acked(comm, &group);
#endif
  if (rc != MPI_SUCCESS) return rc;
  failed = group_ranks_in(group, comm);
  MPI_Group_free(&group);
  return MPI_SUCCESS;
}

int ack_failed(MPI_Comm comm, std::vector<int>& failed) { return failed_ranks(comm, true, failed); }
int get_failed(MPI_Comm comm, std::vector<int>& failed) { return failed_ranks(comm, false, failed); }

bool comm_revoked(MPI_Comm comm) {
  int flag = 0;
  if (comm != MPI_COMM_NULL) MPIX_Comm_is_revoked(comm, &flag);
  return flag != 0;
}

#else  // pass-through: no fault tolerance

bool compiled() { return false; }
bool active() { return false; }
bool is_proc_failed(int) { return false; }
bool is_pending(int) { return false; }
bool is_revoked(int) { return false; }
int revoke(MPI_Comm) { return MPI_ERR_UNSUPPORTED_OPERATION; }
int shrink(MPI_Comm, MPI_Comm*) { return MPI_ERR_UNSUPPORTED_OPERATION; }
int agree(MPI_Comm comm, int* flag) {
  // Without failures an agreement is a bitwise-and allreduce.
  return MPI_Allreduce(MPI_IN_PLACE, flag, 1, MPI_INT, MPI_BAND, comm);
}
int iagree(MPI_Comm comm, int* flag, MPI_Request* request) {
  return MPI_Iallreduce(MPI_IN_PLACE, flag, 1, MPI_INT, MPI_BAND, comm, request);
}
int ack_failed(MPI_Comm, std::vector<int>& failed) {
  failed.clear();
  return MPI_SUCCESS;
}
int get_failed(MPI_Comm, std::vector<int>& failed) {
  failed.clear();
  return MPI_SUCCESS;
}
bool comm_revoked(MPI_Comm) { return false; }

#endif

bool is_failure(int rc) { return is_proc_failed(rc) || is_revoked(rc); }

namespace {

// Nothing but the revoke here: MPI's error handler is no place to throw or
// to repair, and it has no user data to reach the runtime with.
void revoke_on_failure(MPI_Comm* comm, int* rc, ...) {
  if (comm != nullptr && rc != nullptr && is_failure(*rc)) revoke(*comm);
}

}  // namespace

void set_revoking_errhandler(MPI_Comm comm) {
  if (comm == MPI_COMM_NULL) return;
  MPI_Errhandler handler = MPI_ERRHANDLER_NULL;
  MPI_Comm_create_errhandler(&revoke_on_failure, &handler);
  MPI_Comm_set_errhandler(comm, handler);
  MPI_Errhandler_free(&handler);  // freed with the last communicator using it
}

namespace {

// An agreement's cell that ERA may still write after the call returned (a
// failed or abandoned agreement): never freed, and held here for the
// process's life so that LeakSanitizer tells it from a leak (one int per
// such agreement; a process sees a few).
void leave_behind(int* cell) {
  static auto* cells = new std::vector<std::unique_ptr<int>>();  // never destroyed: ERA may write at exit
  cells->emplace_back(cell);
}

}  // namespace

void release(MPI_Comm& comm) {
  if (comm == MPI_COMM_NULL || comm == MPI_COMM_WORLD) return;
  if (!comm_revoked(comm)) MPI_Comm_free(&comm);
  comm = MPI_COMM_NULL;
}

Agreement agree_value(MPI_Comm comm, int flag) {
  auto* cell = new int(flag);
  Agreement a;
  a.rc = agree(comm, cell);
  a.flag = *cell;
  if (a.rc == MPI_SUCCESS)
    delete cell;
  else
    leave_behind(cell);
  return a;
}

Agreement agree_polled(MPI_Comm comm, int flag, const std::function<bool()>& keep_waiting) {
  PendingAgreement p;
  p.post(comm, flag);
  while (!p.test()) {
    if (!keep_waiting()) {
      p.abandon();  // the request stays on a communicator the repair replaces
      Agreement a;
      a.abandoned = true;
      return a;
    }
  }
  return p.result();
}

int PendingAgreement::post(MPI_Comm comm, int flag) {
  cell_ = new int(flag);
  done_ = false;
  result_ = Agreement{};
  result_.rc = iagree(comm, cell_, &request_);
  if (result_.rc != MPI_SUCCESS) {  // test() reports it
    done_ = true;
    leave_behind(cell_);
    cell_ = nullptr;
  }
  return result_.rc;
}

bool PendingAgreement::test() {
  if (done_) return true;
  if (cell_ == nullptr) return false;
  int done = 0;
  result_.rc = MPI_Test(&request_, &done, MPI_STATUS_IGNORE);
  if (result_.rc == MPI_SUCCESS && !done) return false;
  done_ = true;
  result_.flag = *cell_;
  if (result_.rc == MPI_SUCCESS)
    delete cell_;
  else
    leave_behind(cell_);
  cell_ = nullptr;
  return true;
}

void PendingAgreement::abandon() {
  if (!done_ && cell_ != nullptr) result_.abandoned = true;
  if (cell_ != nullptr) leave_behind(cell_);  // with the request
  cell_ = nullptr;
  request_ = MPI_REQUEST_NULL;
  done_ = false;
}

std::string error_name(int rc) {
  if (rc == MPI_SUCCESS) return "MPI_SUCCESS";
#if FX_HAVE_ULFM
  switch (error_class(rc)) {
    case MPIX_ERR_PROC_FAILED:
      return "MPIX_ERR_PROC_FAILED";
    case MPIX_ERR_PROC_FAILED_PENDING:
      return "MPIX_ERR_PROC_FAILED_PENDING";
    case MPIX_ERR_REVOKED:
      return "MPIX_ERR_REVOKED";
    default:
      break;
  }
#endif
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  return std::string(text, static_cast<std::size_t>(len));
}

std::vector<int> missing_ranks(MPI_Comm comm, MPI_Comm sub) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  std::vector<int> all(static_cast<std::size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  const auto where = translate(comm, all, sub);
  std::vector<int> missing;
  for (int r = 0; r < n; ++r) {
    if (where[static_cast<std::size_t>(r)] == MPI_UNDEFINED) missing.push_back(r);
  }
  return missing;
}

std::vector<int> translate(MPI_Comm from, const std::vector<int>& ranks, MPI_Comm to) {
  std::vector<int> out(ranks.size(), MPI_UNDEFINED);
  if (ranks.empty()) return out;
  MPI_Group gf, gt;
  MPI_Comm_group(from, &gf);
  MPI_Comm_group(to, &gt);
  MPI_Group_translate_ranks(gf, static_cast<int>(ranks.size()), ranks.data(), gt, out.data());
  MPI_Group_free(&gf);
  MPI_Group_free(&gt);
  return out;
}

}  // namespace fx::ulfm
