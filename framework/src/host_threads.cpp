#include "host_threads.hpp"

#include <Kokkos_Core.hpp>

#if defined(KOKKOS_ENABLE_OPENMP)
#include <omp.h>
#endif

namespace fx::detail {

void release_host_threads() {
#if defined(KOKKOS_ENABLE_OPENMP)
  omp_pause_resource_all(omp_pause_soft);
#endif
}

}  // namespace fx::detail
