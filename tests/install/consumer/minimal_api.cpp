// The installed API is minimal: what only the runtime may do (set the
// store's communicator, revoke it, hook its fault points; set a report's
// verdict, adopt another process's history) is out of an application's
// reach. Each check fails this build when an application could call it
// (access is checked during substitution, so the detectors see private).
#include <fx/fx.hpp>

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

static_assert(!can_set_comm<fx::DataStore>::value, "an application can call DataStore::set_comm");
static_assert(!can_revoke<fx::DataStore>::value, "an application can call DataStore::revoke");
static_assert(!can_set_fault_hook<fx::DataStore>::value, "an application can call DataStore::set_fault_hook");
static_assert(!can_set_exit<fx::Report>::value, "an application can call Report::set_exit");
static_assert(!can_adopt_history<fx::Report>::value, "an application can call Report::adopt_history");
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
