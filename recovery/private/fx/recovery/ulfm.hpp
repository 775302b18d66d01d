#pragma once
// A thin layer over the MPI's ULFM extension (MPIX_*), hiding the two
// failure-acknowledgement APIs. Without ULFM (FX_ENABLE_ULFM=OFF) every call
// reports that fault tolerance is unavailable and the framework runs in
// pass-through mode: a failure ends the job with a message.
#include <mpi.h>

#include <functional>
#include <string>
#include <vector>

namespace fx::ulfm {

// Compiled against an MPI with ULFM.
bool compiled();
// ...and this job was launched with fault tolerance on (mpiexec --with-ft ulfm).
bool active();

// Process-wide settings fault tolerance needs, right after MPI_Init: a
// write to a dead peer's TCP socket must fail with EPIPE (Open MPI then marks
// the peer failed), not kill the writer with SIGPIPE (Open MPI 5.0.x guards
// only with SO_NOSIGPIPE, which Linux lacks: a survivor forwarding a revoke
// to a just-killed peer on another host died silently in 7 of 109 runs).
void prepare_process();

// The thread level fx needs: the asynchronous commit's copier, the repair
// deadline and an OpenMP backend's workers never call MPI; the main thread
// does.
constexpr int kThreadLevel = MPI_THREAD_FUNNELED;
// The level fx asks MPI_Init_thread for: with it, an asynchronous commit's
// buddy exchange may move on beside the app on a thread of the store's
// (checkpoint.memory.progress), while the main thread calls MPI too.
constexpr int kThreadLevelAsked = MPI_THREAD_MULTIPLE;
// "" when `provided` (MPI_Init_thread's answer) is at least kThreadLevel,
// else the one line that says what the MPI library gave and fx needs.
std::string thread_level_shortfall(int provided);
// "" unless this process lost its mpiexec before MPI_Init: started as one
// of OMPI_COMM_WORLD_SIZE processes, it got a world of `world_size` (Open
// MPI comes up as a singleton once the mpiexec that started it is gone; as
// a world of 1 the orphan then wrote a usage error over the launcher's
// verdict, 18 times in 24 launches under load). Else the line that says so.
std::string orphaned_world(int world_size);
// The MPI library's thread level (MPI_Query_thread) is MPI_THREAD_MULTIPLE.
bool thread_multiple();

// rc is PROC_FAILED, PROC_FAILED_PENDING or REVOKED (by error class).
bool is_failure(int rc);
bool is_revoked(int rc);
bool is_proc_failed(int rc);
// PROC_FAILED_PENDING: an ANY_SOURCE receive that stays posted (after an
// acknowledgement it can still match).
bool is_pending(int rc);
// A short name for an error code: "MPIX_ERR_REVOKED", "MPI_ERR_COMM", ...
std::string error_name(int rc);

int revoke(MPI_Comm comm);
int shrink(MPI_Comm comm, MPI_Comm* newcomm);
int agree(MPI_Comm comm, int* flag);
int iagree(MPI_Comm comm, int* flag, MPI_Request* request);
// MPIX_Comm_is_revoked (false without ULFM).
bool comm_revoked(MPI_Comm comm);
// MPI_Comm_free for fx's communicators, but a revoked one is left to MPI:
// ERA (Open MPI's agreement) may still hold the state of an agreement on
// it that a failure cut short, and a communicator that reuses its id ran
// its own agreements into that state (two processes crashed in ERA's
// message handler inside a later MPIX_Comm_shrink, in 5 of 8 runs of a
// kill inside a parity restore at 4 + 3). A few such per repair. Sets
// `comm` to MPI_COMM_NULL; MPI_COMM_NULL and MPI_COMM_WORLD pass.
void release(MPI_Comm& comm);
// Errors on `comm` return (as MPI_ERRORS_RETURN), and a process failure or
// a revoke seen by any call on it, fx's or the application's own, revokes
// it: a failure that code calling MPI directly did not check still reaches
// every rank, and the runtime finds the communicator revoked at the step's
// end (docs/user-guide.md: "Code that calls MPI itself").
void set_revoking_errhandler(MPI_Comm comm);

// An agreement on `flag` (bitwise AND over the live processes), the one
// place fx agrees. Open MPI's agreement (ERA) can write its result after it
// returned an error, so the value lives in a heap cell that is left behind
// (leaked) unless the agreement completed normally.
struct Agreement {
  int rc = MPI_SUCCESS;  // as MPIX_Comm_agree returns it (PROC_FAILED still agrees the flag)
  int flag = 0;
  bool abandoned = false;  // keep_waiting said stop: request and cell left behind
};
Agreement agree_value(MPI_Comm comm, int flag);
// The same, nonblocking underneath: MPIX_Comm_iagree polled, with
// keep_waiting() called between polls (a revoke does not interrupt an
// agreement, so callers watch for a repair starting elsewhere, deadlines,
// ...). keep_waiting may throw: the cell is left behind then too.
Agreement agree_polled(MPI_Comm comm, int flag, const std::function<bool()>& keep_waiting);

// An agreement posted now and finished later (an asynchronous checkpoint
// commit's, tested between the application's steps). Destroyed while in
// flight, it leaves its request and cell behind (abandoned).
class PendingAgreement {
 public:
  PendingAgreement() = default;
  PendingAgreement(const PendingAgreement&) = delete;
  PendingAgreement& operator=(const PendingAgreement&) = delete;
  ~PendingAgreement() { abandon(); }

  int post(MPI_Comm comm, int flag);  // MPIX_Comm_iagree's return code
  bool posted() const { return cell_ != nullptr || done_; }
  // One MPI_Test; true once complete (or failed): result() then holds it.
  bool test();
  const Agreement& result() const { return result_; }
  void abandon();  // request and cell left behind, as a repair replaces the comm

 private:
  int* cell_ = nullptr;  // deleted only after a normal completion
  MPI_Request request_ = MPI_REQUEST_NULL;
  bool done_ = false;
  Agreement result_;
};

// Acknowledge the failures this process knows of and return them as ranks
// of comm (so MPI_ANY_SOURCE receives work again).
int ack_failed(MPI_Comm comm, std::vector<int>& failed_ranks);
// The failed ranks of comm this process knows of, without acknowledging.
int get_failed(MPI_Comm comm, std::vector<int>& failed_ranks);

// Ranks of comm (in comm's numbering) that are not in sub.
std::vector<int> missing_ranks(MPI_Comm comm, MPI_Comm sub);
// Translate ranks of `from` into ranks of `to` (MPI_UNDEFINED when absent).
std::vector<int> translate(MPI_Comm from, const std::vector<int>& ranks, MPI_Comm to);

}  // namespace fx::ulfm
