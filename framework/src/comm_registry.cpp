#include "comm_registry.hpp"

#include <fx/recovery/comm_access.hpp>
#include <fx/recovery/ulfm.hpp>

#include <algorithm>

namespace fx::detail {

void CommRegistry::start(MPI_Comm app) {
  ulfm::set_revoking_errhandler(app);
  app_ = CommAccess::tracked(std::make_shared<CommSlot>(CommSlot{app, &handler_}));
}

MPI_Comm CommRegistry::make(int color, int key, bool dup, const char* call, const char* file,
                            int line) const {
  MPI_Comm c = MPI_COMM_NULL;
  const int rc = dup ? MPI_Comm_dup(app_.raw(), &c) : MPI_Comm_split(app_.raw(), color, key, &c);
  app_.check(rc, call, file, line);
  ulfm::set_revoking_errhandler(c);
  return c;
}

Comm CommRegistry::derive(int color, int key, bool dup) {
  const MPI_Comm c = make(color, key, dup, dup ? "MPI_Comm_dup" : "MPI_Comm_split", __FILE__, __LINE__);
  derived_.push_back({std::make_shared<CommSlot>(CommSlot{c, &handler_}), color, key, dup});
  return CommAccess::tracked(derived_.back().slot);
}

void CommRegistry::notify(const FailureEvent& ev) const {
  for (const auto& cb : callbacks_) cb(ev);
}

void CommRegistry::drop_registrations() {
  for (auto& d : derived_) ulfm::release(d.slot->raw);
  derived_.clear();
  callbacks_.clear();
  stale_ = false;
}

void CommRegistry::revoke_all(MPI_Comm world) {
  revoked_ = true;
  if (app_.valid()) ulfm::revoke(app_.raw());
  for (auto& d : derived_) {
    if (d.slot->raw != MPI_COMM_NULL) ulfm::revoke(d.slot->raw);
  }
  ulfm::revoke(world);
}

void CommRegistry::free_revoked() {
  MPI_Comm old_app = app_.raw();
  ulfm::release(old_app);
  for (auto& d : derived_) ulfm::release(d.slot->raw);
}

// Revoked, and a process of it known to have failed: a TryBlock's deadline
// revokes a communicator with nobody dead (the block rebuilds it), and that
// is no failure to repair.
bool CommRegistry::revoked_unseen() const {
  if (revoked_) return false;
  auto failed = [](MPI_Comm c) {
    std::vector<int> ranks;
    return ulfm::comm_revoked(c) && ulfm::get_failed(c, ranks) == MPI_SUCCESS && !ranks.empty();
  };
  if (failed(app_.raw())) return true;
  return std::any_of(derived_.begin(), derived_.end(), [&](const Derived& d) { return failed(d.slot->raw); });
}

void CommRegistry::install(MPI_Comm app, bool survivor) {
  ulfm::set_revoking_errhandler(app);
  CommAccess::slot(app_)->raw = app;
  if (survivor) stale_ = !derived_.empty();
  revoked_ = false;
}

void CommRegistry::rebuild_if_stale() {
  if (!stale_) return;
  for (auto& d : derived_) {
    d.slot->raw = make(d.color, d.key, d.dup,
                       d.dup ? "MPI_Comm_dup (derived rebuild)" : "MPI_Comm_split (derived rebuild)",
                       __FILE__, __LINE__);
  }
  stale_ = false;
}

}  // namespace fx::detail
