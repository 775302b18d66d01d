#pragma once
// The host backend's worker threads of a process that runs no kernel for a
// while: an idle spare.

namespace fx::detail {

// Lets an OpenMP backend's thread pool go (omp_pause_resource_all): after
// Kokkos' first parallel region the pool stays, and with
// OMP_WAIT_POLICY=active its threads spin for good (an idle spare used 66 %
// of an active rank's CPU time). The next parallel region, once the spare
// is promoted, makes the pool again. A no-op with other backends.
void release_host_threads();

}  // namespace fx::detail
