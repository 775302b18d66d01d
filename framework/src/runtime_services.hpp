#pragma once
// What a TryBlock rollback (tryblock.cpp) and a Reinit restart (reinit.cpp)
// may ask of the runtime, and nothing more. Context hands it out through
// ContextAccess; the runtime implements it.
#include <fx/comm.hpp>
#include <fx/config.hpp>
#include <fx/inject.hpp>

#include <cstdint>
#include <optional>

namespace fx::detail {

class RuntimeServices : public FailureHandler {
 public:
  // on_failure() (revoke, repair pending) and interrupted() come from FailureHandler.
  virtual const Config& config() const = 0;
  virtual std::int64_t iteration() const = 0;
  virtual int recoveries() const = 0;
  virtual bool failing() const = 0;      // revoked, repair pending
  virtual void check_world_watch() = 0;  // throws ProcessFailure once a failure was announced
  virtual void fault_point(Phase phase) = 0;

  // Reinit: the resilient function registers and restores its own data.
  virtual void app_restores() = 0;                      // no restore by the runtime before the first step
  virtual void drop_registrations() = 0;                // derived comms and failure callbacks
  virtual void reached(std::int64_t iteration) = 0;     // the function is at `iteration`
  virtual void checkpoint(std::int64_t iteration) = 0;  // store commit, with its report entry
  // The newest checkpoint (nullopt: none), timed into the recovery record.
  virtual std::optional<std::int64_t> restore_checkpoint() = 0;
  virtual Report& report() = 0;  // the run report (a TryBlock's record)
};

}  // namespace fx::detail
