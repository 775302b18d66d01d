// The installed API is minimal: what only the runtime may do (make a
// store, set its communicator, revoke it, hook its fault points, restore,
// move commits on, re-protect; make a Context or a tracked Comm; set a
// report's verdict, adopt another process's history) is out of an
// application's reach. Each check fails this build when an application could call it
// (access is checked during substitution, so the detectors see private).
#include <fx/fx.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>

namespace {

template <class T>
T& any();

#define FX_CONSUMER_CALLABLE(name, expr) \
  template <class T, class = void>       \
  struct name : std::false_type {};      \
  template <class T>                     \
  struct name<T, std::void_t<decltype(expr)>> : std::true_type {}

FX_CONSUMER_CALLABLE(can_set_comm, any<T>().set_comm(any<fx::Comm>()));
FX_CONSUMER_CALLABLE(can_revoke, any<T>().revoke());
FX_CONSUMER_CALLABLE(can_set_fault_hook, any<T>().set_fault_hook(nullptr));
FX_CONSUMER_CALLABLE(can_set_exit, any<T>().set_exit(fx::ExitCode::ok, std::string()));
FX_CONSUMER_CALLABLE(can_adopt_history, any<T>().adopt_history(std::string()));
FX_CONSUMER_CALLABLE(can_add_result, any<T>().set_result(std::string(), 1.0));
FX_CONSUMER_CALLABLE(can_add_failure, any<T>().add_failure(fx::FailureRecord{}));
FX_CONSUMER_CALLABLE(can_add_recovery, any<T>().add_recovery(fx::RecoveryRecord{}));
// The runtime's steps of the store (detail::StoreAccess's alone).
FX_CONSUMER_CALLABLE(can_restore, any<T>().restore());
FX_CONSUMER_CALLABLE(can_progress, any<T>().progress());
FX_CONSUMER_CALLABLE(can_start_reprotection, any<T>().start_reprotection());
FX_CONSUMER_CALLABLE(can_take_committed, any<T>().take_committed());
FX_CONSUMER_CALLABLE(can_take_resized_restore, any<T>().take_resized_restore());
FX_CONSUMER_CALLABLE(can_commit, any<T>().commit(std::int64_t{1}));
FX_CONSUMER_CALLABLE(can_restore_resized, any<T>().restore_resized(fx::PriorWants{}, fx::PriorUse{}));
// A Comm's runtime side (detail::CommAccess's alone).
FX_CONSUMER_CALLABLE(can_handler, any<T>().handler());
FX_CONSUMER_CALLABLE(can_slot, any<T>().slot());

static_assert(!can_set_comm<fx::DataStore>::value, "an application can call DataStore::set_comm");
static_assert(!can_revoke<fx::DataStore>::value, "an application can call DataStore::revoke");
static_assert(!can_set_fault_hook<fx::DataStore>::value, "an application can call DataStore::set_fault_hook");
static_assert(!can_set_exit<fx::Report>::value, "an application can call Report::set_exit");
static_assert(!can_adopt_history<fx::Report>::value, "an application can call Report::adopt_history");
static_assert(!can_restore<fx::DataStore>::value, "an application can call DataStore::restore");
static_assert(!can_progress<fx::DataStore>::value, "an application can call DataStore::progress");
static_assert(!can_start_reprotection<fx::DataStore>::value,
              "an application can call DataStore::start_reprotection");
static_assert(!can_take_committed<fx::DataStore>::value, "an application can call DataStore::take_committed");
static_assert(!can_take_resized_restore<fx::DataStore>::value,
              "an application can call DataStore::take_resized_restore");
static_assert(can_commit<fx::DataStore>::value && can_restore_resized<fx::DataStore>::value,
              "ctx.store() lost commit() or restore_resized()");
// Only the runtime makes a store (one an application made never gets a
// communicator), a Context, a PriorPiece, or a Comm that reports to the
// runtime or follows its repairs.
static_assert(!std::is_constructible_v<fx::DataStore> &&
                  !std::is_constructible_v<fx::DataStore, fx::CheckpointConfig>,
              "an application can make a DataStore");
static_assert(!std::is_constructible_v<fx::Context, fx::detail::Runtime&>,
              "an application can make a Context");
static_assert(!std::is_constructible_v<fx::PriorPiece, const fx::detail::PriorImage&>,
              "an application can make a PriorPiece");
static_assert(!std::is_constructible_v<fx::Comm, MPI_Comm, fx::detail::FailureHandler*> &&
                  !std::is_constructible_v<fx::Comm, std::shared_ptr<fx::detail::CommSlot>>,
              "an application can make a Comm on the runtime's failure handler or slot");
static_assert(!can_handler<fx::Comm>::value && !can_slot<fx::Comm>::value,
              "an application can reach a Comm's failure handler or slot");
static_assert(std::is_constructible_v<fx::Comm, MPI_Comm>, "an untracked Comm can no longer be made");
// ctx.report() is a results-only view: no record, no verdict.
using View = decltype(any<fx::Context>().report());
static_assert(std::is_same_v<View, fx::ReportView>, "ctx.report() is no longer the results-only view");
static_assert(!can_add_failure<View>::value && !can_add_recovery<View>::value,
              "ctx.report() can record failures");
static_assert(!can_set_exit<View>::value && !can_adopt_history<View>::value,
              "ctx.report() can set the verdict");
// The detectors do see what is public.
static_assert(can_add_result<View>::value && can_add_failure<fx::Report>::value,
              "the detectors no longer see public members");

}  // namespace
