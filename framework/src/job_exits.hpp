#pragma once

namespace fx::detail {
// From here on an exit() while MPI is live ends the whole job (verdict 1,
// through end_job_from_here) instead of this process alone. Call it once
// the logger exists: the handler uses it, and must run before it is gone.
// So does another process's exit with a non-zero status, reported by PMIx
// (where fx was built with PMIx's headers), which ULFM does not see.
void watch_app_exits();
// This process is about to call MPI_Finalize, which every process reaches
// before any leaves: a non-zero exit from here on is a verdict's code.
void stop_watching_peer_exits();
}  // namespace fx::detail
