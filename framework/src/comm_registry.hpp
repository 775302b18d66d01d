#pragma once
// What the app communicates and registers through: the app communicator's
// slot, the communicators derived from it (replayed after a repair) and the
// failure callbacks. Revokes them all on a failure; a repair installs the
// new app communicator in the same slot.
#include <fx/comm.hpp>
#include <fx/context.hpp>

#include <functional>
#include <memory>
#include <vector>

namespace fx::detail {

class CommRegistry {
 public:
  explicit CommRegistry(FailureHandler& handler) : handler_(handler) {}
  CommRegistry(const CommRegistry&) = delete;
  CommRegistry& operator=(const CommRegistry&) = delete;

  const Comm& app() const { return app_; }
  void start(MPI_Comm app);  // the app communicator of start-up (NULL on a spare)

  // Collective on app(): a split (or dup) replayed after each repair.
  Comm derive(int color, int key, bool dup);
  void add_callback(std::function<void(const FailureEvent&)> cb) { callbacks_.push_back(std::move(cb)); }
  void notify(const FailureEvent& ev) const;
  // What the app registered (derived communicators, callbacks) goes.
  void drop_registrations();

  // Revoked by a failure, repair pending.
  bool revoked() const { return revoked_; }
  // Revoked by the error handler (ulfm::set_revoking_errhandler) after a
  // process failure the app's own MPI calls did not check (one of its
  // processes is known to have failed), and not yet by fx.
  bool revoked_unseen() const;
  // Revokes app(), every derived communicator and `world` (waking the spares).
  void revoke_all(MPI_Comm world);
  // A repair: the old communicators are freed; then the new app
  // communicator takes the slot. A survivor's derived communicators are
  // replayed by rebuild_if_stale() (collective on the new app()).
  void free_revoked();
  void install(MPI_Comm app, bool survivor);
  void rebuild_if_stale();

 private:
  struct Derived {
    std::shared_ptr<CommSlot> slot;
    int color = 0, key = 0;
    bool dup = false;
  };
  MPI_Comm make(int color, int key, bool dup, const char* call, const char* file, int line) const;

  FailureHandler& handler_;
  Comm app_;  // its slot follows repairs
  std::vector<Derived> derived_;
  std::vector<std::function<void(const FailureEvent&)>> callbacks_;
  bool revoked_ = false;
  bool stale_ = false;  // derived_ were made on a freed app communicator
};

}  // namespace fx::detail
