// TryBlocks: admission, a body of nonblocking messages completed locally,
// and a commit whose outcome is the same on every participant.
//
// The decision is always the result of agreements (MPIX_Comm_iagree), never
// a local verdict: an agreement's value and its PROC_FAILED error are
// uniform over the live ranks, so every participant takes the same branch of
// the policy. A rank that waits past the deadline revokes the block's
// communicator and keeps waiting: agreement ignores revocation, but the late
// rank sees it on arrival and asserts a timeout, so the group aborts
// together. A deadline past the repair timeout ends the job (never a hang).
#include <fx/clock.hpp>
#include <fx/context.hpp>
#include <fx/data_store/member_shape.hpp>
#include <fx/data_store/store_access.hpp>
#include <fx/detail/status.hpp>
#include <fx/log.hpp>
#include <fx/recovery/comm_access.hpp>
#include <fx/recovery/shutdown.hpp>
#include <fx/recovery/ulfm.hpp>
#include <fx/tryblock.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "deadline.hpp"
#include "tryblock_detail.hpp"

namespace fx {
namespace {

constexpr std::array<TryError, 5> kErrors = {TryError::incorrect_result, TryError::user_assertion,
                                             TryError::timeout, TryError::process_failure, TryError::unknown};

unsigned bit(TryError e) { return static_cast<unsigned>(e); }

std::string list_errors(const std::vector<TryRankError>& errors) {
  std::string s;
  for (const auto& e : errors) {
    if (!s.empty()) s += ", ";
    s += fmt::format("rank {} {}", e.rank, to_string(e.error));
  }
  return s.empty() ? "no error reported" : s;
}

}  // namespace

bool TryOutcome::has(TryError error) const {
  return std::any_of(errors.begin(), errors.end(), [&](const TryRankError& e) { return e.error == error; });
}

std::vector<int> TryOutcome::ranks_with(TryError error) const {
  std::vector<int> out;
  for (const auto& e : errors)
    if (e.error == error) out.push_back(e.rank);
  return out;
}

std::string TryOutcome::describe() const {
  std::string s = committed ? "committed" : fmt::format("aborted ({})", to_string(action));
  if (attempts > 1) s += fmt::format(" after {} attempts", attempts);
  if (!committed) s += ": " + list_errors(errors);
  for (std::size_t i = 0; i < history.size(); ++i)
    s += fmt::format("; attempt {}: {}", i + 1, list_errors(history[i]));
  for (const auto& in : inner) s += fmt::format("; inner '{}' {}", in.name, in.describe());
  return s;
}

namespace detail {

struct Pending {
  MPI_Request req = MPI_REQUEST_NULL;
  bool send = false;
};

struct TryFrame {
  TryFrame(Context& c, TryState& s, std::string n, Comm g, TryFrame* p, int a, double timeout)
      : ctx(c),
        rt(ContextAccess::rt(c)),
        state(s),
        name(std::move(n)),
        comm(std::move(g)),
        parent(p),
        attempt(a),
        timeout_s(timeout) {}

  Context& ctx;
  RuntimeServices& rt;
  TryState& state;
  std::string name;
  Comm comm;
  TryFrame* parent;
  int attempt;
  double timeout_s;
  std::uint32_t seq = 0;  // admission number on comm
  int tag_base = 0;
  double deadline = 0;
  unsigned errors = 0;        // TryError bits asserted here
  bool failure_seen = false;  // a process failure was observed here
  // The body threw what no retry can fix (a usage error, a non-fx
  // exception): the block ends on every rank and this rethrows it.
  std::exception_ptr fatal;
  bool suspect = false;            // comm is or may be revoked
  bool skip_body = false;          // synchronous admission failed
  bool gave_up = false;            // this rank revoked comm: the others were late
  std::vector<Pending> pending;    // started, not yet complete
  std::vector<Pending> abandoned;  // failed, or given up
  std::vector<std::unique_ptr<TryFrame>> deferred;
  std::vector<TryOutcome> inner;
};

struct TryAccess {
  static TryScope scope(TryFrame& f) { return TryScope(f); }
};

TryState& try_state(Context& ctx) {
  auto& p = ContextAccess::try_state(ctx);
  if (!p) p = std::make_shared<TryState>();
  const int epoch = ContextAccess::rt(ctx).recoveries();
  if (p->epoch != epoch) {
    p->epoch = epoch;
    p->admissions.clear();
    p->revoked_by_me.clear();
  }
  return *p;
}

namespace {

// First agreement: AND of these bits (set = fine), then a fingerprint of
// (name, admission number, deferred blocks) and its complement: equal on
// every rank iff every rank entered the same block.
constexpr unsigned kOk = 1u << 0;
constexpr unsigned kClean = 1u << 1;       // comm not revoked as far as I know
constexpr unsigned kNoRecovery = 1u << 2;  // my runtime has no failure pending
constexpr unsigned kNoRollback = 1u << 3;  // this block did not roll back here before
constexpr unsigned kPrintShift = 4;
constexpr unsigned kNoFatal = 1u << 20;   // no rank's body threw an error no retry can fix
constexpr unsigned kSpare = 0xffe00000u;  // unused bits stay 1 under AND
// Detail agreements: 6 fields of 5 error bits per agreement, OR-ed through
// AND of complements, plus two flags.
constexpr int kFieldsPerAgree = 6;
constexpr unsigned kDetailSuspect = 1u << 30;
constexpr unsigned kDetailRecovery = 1u << 31;

bool comm_revoked(MPI_Comm c) { return ulfm::comm_revoked(c); }

// No agreement may outlive this: a rank that never arrives is not failed,
// so ULFM cannot exclude it; the whole job ends, with the reason.
[[noreturn]] void leave_job(const std::string& why) {
  log::error("{}; leaving the job", why);
  end_job_from_here(ExitCode::aborted, why);
}

void note_rc(TryFrame& f, int rc, const char* what) {
  if (ulfm::is_proc_failed(rc)) {
    f.failure_seen = true;
  } else if (ulfm::is_revoked(rc)) {
    // Revoked by a peer whose deadline passed (this rank is late), by this
    // rank (the others are late), or by fx's failure handler.
    f.suspect = true;
    if (f.rt.failing())
      f.failure_seen = true;
    else if (!f.state.revoked_by_me.count(CommAccess::slot(f.comm).get()))
      f.errors |= bit(TryError::timeout);
  } else {
    log::warn("TryBlock '{}': {} returned {}", f.name, what, ulfm::error_name(rc));
    f.errors |= bit(TryError::unknown);
  }
}

// Test f's messages until all are complete or `until` passes.
bool complete(TryFrame& f, double until) {
  while (true) {
    bool waiting = false;
    for (auto& p : f.pending) {
      if (p.req == MPI_REQUEST_NULL) continue;
      int done = 0;
      const int rc = MPI_Test(&p.req, &done, MPI_STATUS_IGNORE);
      if (rc != MPI_SUCCESS) {
        note_rc(f, rc, p.send ? "a send" : "a receive");
        if (p.req != MPI_REQUEST_NULL) f.abandoned.push_back(p);  // e.g. PROC_FAILED_PENDING
        p.req = MPI_REQUEST_NULL;
      } else if (!done) {
        waiting = true;
      }
    }
    if (!waiting) {
      f.pending.clear();
      return true;
    }
    if (now() > until) return false;
  }
}

// Receives are cancelled so that no late message lands in a buffer a retry
// reuses; sends finish (or not) in the background, under a dead tag range.
void drop(Pending& p) {
  if (p.req == MPI_REQUEST_NULL) return;
  if (!p.send) {
    MPI_Cancel(&p.req);
    int done = 0;
    const double until = now() + 0.1;
    while (!done && now() < until && p.req != MPI_REQUEST_NULL) {
      if (MPI_Test(&p.req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
    }
  }
  if (p.req != MPI_REQUEST_NULL) MPI_Request_free(&p.req);
}

void release(TryFrame& f) {
  for (auto& p : f.pending) drop(p);
  for (auto& p : f.abandoned) drop(p);
  f.pending.clear();
  f.abandoned.clear();
  for (auto& d : f.deferred) release(*d);
}

struct Agreed {
  unsigned flag = 0;
  bool failed = false;  // MPIX_ERR_PROC_FAILED: uniform over the live ranks
};

Agreed agree_within(TryFrame& f, unsigned flag, double deadline) {
  // Polling is what the blocking agreement does inside (a wait on the same
  // request, progress yielding when idle), plus a clock check.
  const double hard = deadline + f.rt.config().recovery.timeout_s;
  bool revoked = false;
  const ulfm::Agreement a = ulfm::agree_polled(f.comm.raw(), static_cast<int>(flag), [&] {
    const double t = now();
    if (!revoked && t > deadline) {
      // The agreement goes on; the late rank will find the comm revoked.
      log::debug("TryBlock '{}': deadline passed in the commit; revoking its communicator", f.name);
      ulfm::revoke(f.comm.raw());
      f.state.revoked_by_me.insert(CommAccess::slot(f.comm).get());
      f.suspect = true;
      f.gave_up = true;
      revoked = true;
    }
    // Still waiting after the deadline, and a repair is under way: a rank of
    // the group may have left for it (and will never come). Join it.
    if (revoked && (f.rt.failing() || f.rt.interrupted())) {
      f.rt.on_failure(f.comm.raw(), MPI_ERR_OTHER, "a TryBlock commit");
      FX_THROW(ProcessFailure,
               fmt::format("TryBlock '{}': a repair started while its commit waited for a rank", f.name), {});
    }
    if (t > hard) {
      leave_job(
          fmt::format("TryBlock '{}': a rank of its group did not reach the commit {:.1f} s after the "
                      "deadline (recovery.timeout_s)",
                      f.name, hard - deadline));
    }
    return true;
  });
  const auto value = static_cast<unsigned>(a.flag);
  if (a.rc == MPI_SUCCESS) return {value, false};
  if (!ulfm::is_proc_failed(a.rc)) throw MpiError("MPIX_Comm_iagree", a.rc, __FILE__, __LINE__);
  return {value, true};
}

unsigned fingerprint(const TryFrame& f) {
  std::uint32_t h = 2166136261u;  // FNV-1a over the name, then the counters
  for (unsigned char c : f.name) h = (h ^ c) * 16777619u;
  h = (h ^ f.seq) * 16777619u;
  h = (h ^ static_cast<std::uint32_t>(f.deferred.size())) * 16777619u;
  return (h ^ (h >> 8) ^ (h >> 16) ^ (h >> 24)) & 0xffu;
}

bool fingerprints_match(unsigned flag) {
  return ((flag >> kPrintShift) & 0xffu) == (~(flag >> (kPrintShift + 8)) & 0xffu);
}

bool remembers_rollback(const TryFrame& f) {
  return f.state.rolled_back.count({f.name, f.rt.iteration()}) > 0;
}

unsigned first_flag(const TryFrame& f, bool ok) {
  const unsigned fp = fingerprint(f);
  unsigned flag = kSpare | (fp << kPrintShift) | ((~fp & 0xffu) << (kPrintShift + 8));
  if (ok && !f.fatal) flag |= kOk;
  if (!f.fatal) flag |= kNoFatal;
  if (!f.suspect) flag |= kClean;
  if (!f.rt.failing()) flag |= kNoRecovery;
  if (!remembers_rollback(f)) flag |= kNoRollback;
  return flag;
}

// A rank that finds the comm revoked on arrival is late: someone gave up on
// it. `probe` first lets revocation notices that queued up while this rank
// was busy elsewhere take effect (at admission; in the commit the body's
// message tests did that, and a probe would cost a yield per block).
void check_arrival(TryFrame& f, bool probe) {
  if (probe) {
    int flag = 0;
    MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, f.comm.raw(), &flag, MPI_STATUS_IGNORE);
  }
  if (!comm_revoked(f.comm.raw())) return;
  f.suspect = true;
  if (f.state.revoked_by_me.count(CommAccess::slot(f.comm).get())) return;
  if (f.rt.failing())
    f.failure_seen = true;
  else
    f.errors |= bit(TryError::timeout);
}

void admit(TryFrame& f, bool sync) {
  TryState& st = f.state;
  if (st.tag_slots == 0) {
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    st.tag_slots = std::max(1, (flag && ub ? *ub : 32767) / TryScope::kMaxTag - 1);
  }
  f.seq = st.admissions[CommAccess::slot(f.comm).get()]++;
  f.tag_base = TryScope::kMaxTag * (1 + static_cast<int>(f.seq % static_cast<std::uint32_t>(st.tag_slots)));
  f.deadline = now() + f.timeout_s;
  if (!sync) return;
  check_arrival(f, true);
  const Agreed a = agree_within(f, first_flag(f, f.errors == 0 && !f.failure_seen), f.deadline);
  // Uniform result: either every rank runs the body or none does.
  if (a.failed) f.failure_seen = true;
  if (a.failed || !(a.flag & kOk) || !fingerprints_match(a.flag)) f.skip_body = true;
}

void run_body(TryFrame& f, const TryBody& body) {
  if (f.skip_body) return;
  TryScope scope = TryAccess::scope(f);
  TryFrame* outer = f.state.top;
  f.state.top = &f;
  try {
    body(scope);
  } catch (const ProcessFailure& e) {
    f.failure_seen = true;
    log::debug("TryBlock '{}': {}", f.name, e.what());
  } catch (const UsageError&) {
    f.fatal = std::current_exception();  // a bug in the app, not a transient error
  } catch (const ConfigError&) {
    f.fatal = std::current_exception();
  } catch (const Error& e) {
    f.errors |= bit(TryError::unknown);
    log::warn("TryBlock '{}' (attempt {}): the body threw: {}", f.name, f.attempt, e.what());
  } catch (...) {
    f.fatal = std::current_exception();  // std::exception or anything else: not fx's to retry
  }
  f.state.top = outer;
}

struct Decision {
  bool committed = false;
  bool failed = false;    // a process failed, or some runtime has a failure pending
  bool suspect = false;   // the comm must be rebuilt
  bool mismatch = false;  // ranks entered different blocks
  bool rolled_back_before = false;
  bool fatal = false;                             // some rank's body threw an error no retry can fix
  std::vector<std::vector<TryRankError>> errors;  // per frame: the block, then its deferred blocks
};

// Every rank learnt in the commit that some body threw an error no retry
// can fix. The thrower rethrows it (the job ends with its message, as for
// any error); the others join the repair that ends the job.
[[noreturn]] void end_block_fatally(TryFrame& f) {
  if (f.fatal) std::rethrow_exception(f.fatal);
  f.rt.on_failure(f.comm.raw(), MPI_ERR_OTHER, "a TryBlock body's error");
  FX_THROW(ProcessFailure,
           fmt::format("TryBlock '{}': the body threw an error no retry can fix on another rank", f.name),
           {});
}

// This rank's own verdict on the block and its deferred ones: each
// complete, with no error, within the deadline. Marks the timeouts, and
// the block suspect when one of them is.
bool local_verdict(TryFrame& f, const std::vector<TryFrame*>& frames) {
  bool ok = true;
  for (TryFrame* x : frames) {
    // A block that already failed here need not wait for its messages.
    if (x->errors == 0 && !x->failure_seen && !complete(*x, f.deadline)) x->errors |= bit(TryError::timeout);
    ok = ok && x->errors == 0 && !x->failure_seen;
  }
  check_arrival(f, false);
  // Past the deadline by its own clock, unless it spent it waiting for others.
  if (now() > f.deadline && !f.gave_up) f.errors |= bit(TryError::timeout);
  ok = ok && f.errors == 0 && !f.failure_seen;
  for (TryFrame* x : frames) f.suspect = f.suspect || x->suspect;
  return ok;
}

// The first agreement's verdict, for `frames` blocks.
Decision first_decision(const Agreed& a, std::size_t frames) {
  Decision d;
  d.failed = a.failed || !(a.flag & kNoRecovery);
  d.suspect = !(a.flag & kClean);
  d.mismatch = !fingerprints_match(a.flag);
  d.rolled_back_before = !(a.flag & kNoRollback);
  d.fatal = !(a.flag & kNoFatal);
  d.errors.assign(frames, {});
  d.committed = (a.flag & kOk) && !d.failed && !d.mismatch;
  return d;
}

// Who asserted what: every rank sets its own fields, and the
// process_failure bit of the peers it knows dead.
struct Assertions {
  const std::vector<TryFrame*>& frames;
  std::vector<int> dead;
  int me;

  // Error bits of block b on rank r.
  unsigned of(std::size_t b, int r) const {
    unsigned m = 0;
    if (r == me) {
      m = frames[b]->errors;
      // Saw a failure but cannot name the dead peer.
      if (frames[b]->failure_seen && dead.empty()) m |= bit(TryError::unknown);
    }
    if (std::find(dead.begin(), dead.end(), r) != dead.end() && (b == 0 || frames[b]->failure_seen))
      m |= bit(TryError::process_failure);
    return m;
  }
};

// One detail agreement's flag: fields [first, last) of (block, rank), n
// ranks, 5 error bits each, complemented for the AND; plus two flags.
unsigned detail_flag(const TryFrame& f, const Assertions& mine, int first, int last, int n) {
  unsigned flag = ~0u;
  for (int i = first; i < last; ++i)
    flag &= ~(mine.of(static_cast<std::size_t>(i / n), i % n) << (5 * (i - first)));
  if (f.suspect) flag &= ~kDetailSuspect;
  if (f.rt.failing()) flag &= ~kDetailRecovery;
  return flag;
}

// Fields [first, last) of an agreed detail flag, into d's errors.
void read_details(unsigned any, int first, int last, int n, Decision& d) {
  for (int i = first; i < last; ++i) {
    const unsigned m = (any >> (5 * (i - first))) & 31u;
    for (TryError e : kErrors)
      if (m & bit(e)) d.errors[static_cast<std::size_t>(i / n)].push_back({i % n, e});
  }
}

// After a first agreement that did not commit: every rank learns every
// rank's errors, kFieldsPerAgree (block, rank) fields per agreement.
void agree_on_details(TryFrame& f, const std::vector<TryFrame*>& frames, Decision& d) {
  const int n = f.comm.size();
  Assertions mine{frames, {}, f.comm.rank()};
  ulfm::get_failed(f.comm.raw(), mine.dead);
  const int fields = static_cast<int>(frames.size()) * n;
  const double deadline = now() + f.timeout_s;
  for (int first = 0; first < fields; first += kFieldsPerAgree) {
    const int last = std::min(fields, first + kFieldsPerAgree);
    const Agreed c = agree_within(f, detail_flag(f, mine, first, last, n), deadline);
    const unsigned any = ~c.flag;
    d.failed = d.failed || c.failed || (any & kDetailRecovery);
    d.suspect = d.suspect || (any & kDetailSuspect);
    read_details(any, first, last, n, d);
  }
}

Decision decide(TryFrame& f) {
  std::vector<TryFrame*> frames{&f};
  for (auto& d : f.deferred) frames.push_back(d.get());
  const bool ok = local_verdict(f, frames);
  f.rt.fault_point(Phase::tryblock_commit);

  const Agreed a = agree_within(f, first_flag(f, ok), f.deadline);
  Decision d = first_decision(a, frames.size());
  if (d.committed) return d;
  agree_on_details(f, frames, d);
  return d;
}

// Same size, same order, a fresh context: what a timeout needs to go on.
void rebuild(TryFrame& f) {
  const std::shared_ptr<CommSlot>& slot = CommAccess::slot(f.comm);
  MPI_Comm old = slot->raw;
  MPI_Comm fresh = MPI_COMM_NULL;
  int rc = MPI_SUCCESS;
  {
    Deadline guard(f.rt.config().recovery.timeout_s,
                   fmt::format("TryBlock '{}': communicator rebuild", f.name));
    rc = ulfm::shrink(old, &fresh);
  }
  int before = 0, after = -1;
  MPI_Comm_size(old, &before);
  if (rc == MPI_SUCCESS) MPI_Comm_size(fresh, &after);
  if (after != before) {
    if (fresh != MPI_COMM_NULL) MPI_Comm_free(&fresh);
    f.rt.on_failure(old, rc, "TryBlock communicator rebuild");
    FX_THROW(ProcessFailure,
             fmt::format("TryBlock '{}': a process failed while its communicator was rebuilt", f.name), {});
  }
  ulfm::set_revoking_errhandler(fresh);  // as every fx communicator: raw calls' failures revoke it
  slot->raw = fresh;
  ulfm::release(old);
  f.state.revoked_by_me.erase(slot.get());
  if (slot == CommAccess::slot(f.ctx.comm())) StoreAccess::set_comm(f.ctx.store(), f.ctx.comm());
  log::debug("TryBlock '{}': communicator rebuilt after a revocation", f.name);
}

// Recovery with spares, or a rollback: the runtime's repair takes over.
[[noreturn]] void escalate(TryFrame& f, const std::string& why) {
  f.rt.on_failure(f.comm.raw(), MPI_ERR_OTHER, "a TryBlock");
  FX_THROW(ProcessFailure, why, {});
}

// Data-store members as they were at admission.
class Saved {
 public:
  Saved(DataStore& store, const std::optional<std::vector<std::string>>& names, const std::string& block) {
    for (const auto& registered : store.members()) {
      if (names && std::find(names->begin(), names->end(), registered.name) == names->end()) continue;
      const Member m = detail::current(registered);  // a resizable member at its extents now
      copies_.emplace_back(m, std::vector<std::byte>(m.bytes));
      m.save(copies_.back().second.data());
    }
    if (!names) return;
    for (const auto& n : *names) {
      if (std::none_of(copies_.begin(), copies_.end(), [&](const auto& c) { return c.first.name == n; }))
        FX_THROW(UsageError,
                 fmt::format("TryBlock '{}': save names '{}', which is not a registered data-store member",
                             block, n));
    }
  }
  void restore() const {
    for (const auto& [m, bytes] : copies_) {
      if (m.reshape) m.reshape(m.extents);  // the extents it had at admission
      m.load(bytes.data());
    }
  }

 private:
  std::vector<std::pair<Member, std::vector<std::byte>>> copies_;
};

bool notable(const TryOutcome& o) {
  return !o.committed || o.attempts > 1 || std::any_of(o.inner.begin(), o.inner.end(), notable);
}

void record(TryFrame& f, const TryOutcome& o) {
  if (f.parent != nullptr || !notable(o)) return;
  auto& log_ = f.state.log;
  if (log_.size() >= 1000) log_.erase(log_.begin());
  log_.push_back(o);
  if (f.ctx.rank() == 0) {
    f.rt.report().add_tryblock({o.name, o.committed ? TryBlockOutcome::committed : TryBlockOutcome::aborted,
                                o.attempts, o.describe(), f.rt.iteration()});
  }
  // One line per block for the job: the group's first rank speaks.
  const bool speak = !o.committed && f.comm.rank() == 0;
  log::emit(speak ? log::Level::warn : log::Level::debug, "TryBlock '{}' {}", o.name, o.describe());
}

TryOutcome outcome_of(const std::string& name, const std::vector<TryRankError>& errors) {
  TryOutcome o;
  o.name = name;
  o.errors = errors;
  std::sort(o.errors.begin(), o.errors.end(), [](const TryRankError& a, const TryRankError& b) {
    return a.rank != b.rank ? a.rank < b.rank : bit(a.error) < bit(b.error);
  });
  o.errors.erase(std::unique(o.errors.begin(), o.errors.end()), o.errors.end());
  return o;
}

// An aborted nested block: this rank asserts its own errors in the parent.
void propagate(TryFrame& parent, const TryOutcome& o, int my_rank) {
  for (const auto& e : o.errors) {
    if (e.rank == my_rank && e.error != TryError::process_failure) parent.errors |= bit(e.error);
  }
}

// A block's settings: its options over the config's tryblock section.
struct Limits {
  int retries = 0;
  double timeout = 0;
  bool rollback = false;
};

Limits limits_of(Context& ctx, const std::string& name, const TryOptions& options) {
  const TryBlockConfig& cfg = ContextAccess::rt(ctx).config().tryblock;
  Limits l{options.soft_retries.value_or(cfg.soft_retries), options.timeout_s.value_or(cfg.timeout_s),
           options.rollback.value_or(cfg.rollback)};
  if (l.retries < 0 || !(l.timeout > 0))
    FX_THROW(UsageError,
             fmt::format("TryBlock '{}': soft_retries must be >= 0 and timeout_s > 0, got {} and {}", name,
                         l.retries, l.timeout));
  return l;
}

// The attempt's decision, the frame released whatever happens.
Decision decide_and_release(TryFrame& f) {
  Decision d;
  try {
    d = decide(f);
  } catch (...) {
    release(f);
    throw;
  }
  release(f);
  return d;
}

// Deferred blocks decided with this one: their outcomes into f.inner, and
// their errors are the parent's too.
void settle_deferred(TryFrame& f, Decision& d) {
  for (std::size_t b = 1; b < d.errors.size(); ++b) {
    TryOutcome in = outcome_of(f.deferred[b - 1]->name, d.errors[b]);
    in.committed = d.committed;
    in.attempts = 1;
    in.action = d.committed ? TryAction::committed : TryAction::aborted;
    in.inner = std::move(f.deferred[b - 1]->inner);
    f.inner.push_back(std::move(in));
    d.errors[0].insert(d.errors[0].end(), d.errors[b].begin(), d.errors[b].end());
  }
}

// A mismatch of blocks is the app's error; a process failure ends the
// block by a repair (both throw).
void escalate_failure(TryFrame& f, const Decision& d, TryOutcome& out) {
  if (d.mismatch) {
    FX_THROW(UsageError,
             fmt::format("TryBlock '{}': the ranks of its group did not all enter this block (block "
                         "{} on this communicator here); every rank must enter the same blocks in "
                         "the same order",
                         f.name, f.seq));
  }
  if (d.failed) {
    out.action = TryAction::recovery;
    record(f, out);
    escalate(f,
             fmt::format("TryBlock '{}' aborted by a process failure: {}", f.name, list_errors(out.errors)));
  }
}

// An outermost block out of retries: a rollback to the last checkpoint
// (once per block and iteration, when on), else TryBlockAborted.
[[noreturn]] void give_up(TryFrame& f, TryState& st, bool roll_back, TryOutcome& out) {
  if (roll_back) {
    st.rolled_back.insert({f.name, f.rt.iteration()});
    out.action = TryAction::rollback;
    record(f, out);
    escalate(f, fmt::format("TryBlock '{}' failed {} time(s): rolling back to the last checkpoint", f.name,
                            out.attempts));
  }
  out.action = TryAction::abort;
  record(f, out);
  FX_THROW(TryBlockAborted, fmt::format("TryBlock '{}' aborted: {}", f.name, out.describe()));
}

}  // namespace

TryOutcome run_block(Context& ctx, const std::string& name, const Comm& group, const TryBody& body,
                     const TryOptions& options) {
  TryState& st = try_state(ctx);
  if (!group.valid())
    FX_THROW(UsageError, fmt::format("TryBlock '{}': its communicator is not valid here", name));
  const Limits lim = limits_of(ctx, name, options);
  TryFrame* parent = st.top;
  const Saved saved(ctx.store(), options.save, name);
  TryOutcome out;
  std::vector<std::vector<TryRankError>> history;
  for (int attempt = 1;; ++attempt) {
    TryFrame f(ctx, st, name, group, parent, attempt, lim.timeout);
    admit(f, options.sync_admission);
    run_body(f, body);
    Decision d = decide_and_release(f);
    if (d.fatal) end_block_fatally(f);
    settle_deferred(f, d);
    out = outcome_of(name, d.errors[0]);
    out.attempts = attempt;
    out.history = history;
    out.inner = std::move(f.inner);
    escalate_failure(f, d, out);
    if (d.suspect) rebuild(f);
    if (d.committed) {
      out.committed = true;
      out.action = TryAction::committed;
      record(f, out);
      if (parent != nullptr) parent->inner.push_back(out);
      return out;
    }
    if (attempt <= lim.retries) {
      log::debug("TryBlock '{}' attempt {} aborted ({}); retrying", name, attempt, list_errors(out.errors));
      history.push_back(out.errors);
      saved.restore();
      continue;
    }
    saved.restore();  // nothing done by an aborted block stays
    if (parent != nullptr) {
      out.action = TryAction::aborted;
      parent->inner.push_back(out);
      if (options.propagate) propagate(*parent, out, group.rank());
      return out;
    }
    give_up(f, st, lim.rollback && !d.rolled_back_before, out);
  }
}

}  // namespace detail

const std::string& TryScope::name() const { return frame_.name; }
const Comm& TryScope::comm() const { return frame_.comm; }
int TryScope::rank() const { return frame_.comm.rank(); }
int TryScope::size() const { return frame_.comm.size(); }
int TryScope::attempt() const { return frame_.attempt; }
double TryScope::remaining() const { return std::max(0.0, frame_.deadline - now()); }
bool TryScope::ok() const { return frame_.errors == 0 && !frame_.failure_seen; }
void TryScope::raise_error(TryError error) { frame_.errors |= static_cast<unsigned>(error); }
const std::vector<TryOutcome>& TryScope::inner() const { return frame_.inner; }

void TryScope::start(const void* buf, int count, MPI_Datatype type, int peer, int tag, bool send) {
  auto& f = frame_;
  if (tag < 0 || tag >= kMaxTag) {
    FX_THROW(UsageError,
             fmt::format("TryBlock '{}': message tag {} is outside 0..{}", f.name, tag, kMaxTag - 1));
  }
  detail::Pending p;
  p.send = send;
  const int rc =
      send ? MPI_Isend(buf, count, type, peer, f.tag_base + tag, f.comm.raw(), &p.req)
           : MPI_Irecv(const_cast<void*>(buf), count, type, peer, f.tag_base + tag, f.comm.raw(), &p.req);
  if (rc != MPI_SUCCESS) {
    detail::note_rc(f, rc, send ? "MPI_Isend" : "MPI_Irecv");
    return;
  }
  f.pending.push_back(p);
}

bool TryScope::wait(double timeout_s) {
  auto& f = frame_;
  const unsigned before = f.errors;
  const bool seen = f.failure_seen;
  if (!detail::complete(f, timeout_s < 0 ? f.deadline : now() + timeout_s))
    f.errors |= bit(TryError::timeout);
  return f.errors == before && f.failure_seen == seen;
}

TryOutcome TryScope::try_block(const std::string& name, const TryBody& body, const TryOptions& options) {
  return detail::run_block(frame_.ctx, name, frame_.comm, body, options);
}

TryOutcome TryScope::try_block(const std::string& name, const Comm& group, const TryBody& body,
                               const TryOptions& options) {
  return detail::run_block(frame_.ctx, name, group, body, options);
}

void TryScope::defer(const std::string& name, const TryBody& body) {
  auto& f = frame_;
  auto child = std::make_unique<detail::TryFrame>(f.ctx, f.state, name, f.comm, &f, f.attempt, f.timeout_s);
  detail::admit(*child, false);
  child->deadline = f.deadline;  // completed with the parent
  detail::run_body(*child, body);
  f.deferred.push_back(std::move(child));
}

TryOutcome Context::try_block(const std::string& name, const TryBody& body, const TryOptions& options) {
  return detail::run_block(*this, name, comm(), body, options);
}

TryOutcome Context::try_block(const std::string& name, const Comm& group, const TryBody& body,
                              const TryOptions& options) {
  return detail::run_block(*this, name, group, body, options);
}

const std::vector<TryOutcome>& try_log(Context& ctx) { return detail::try_state(ctx).log; }

}  // namespace fx
