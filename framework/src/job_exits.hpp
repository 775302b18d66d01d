#pragma once

namespace fx::detail {
// From here on an exit() while MPI is live ends the whole job (verdict 1,
// through end_job_from_here) instead of this process alone. Call it once
// the logger exists: the handler uses it, and must run before it is gone.
void watch_app_exits();
}  // namespace fx::detail
