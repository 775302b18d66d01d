# Dependency set-up shared by fx's build (FxDependencies.cmake) and its
# installed package (fxConfig.cmake, which has this file beside it): each
# workaround lives here once. Include it after find_package(Kokkos).

# Debian's Kokkos 3.4 records an include path that does not exist.
if(TARGET Kokkos::kokkos)
  get_target_property(_fx_kk_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_fx_kk_ok ON)
  foreach(_fx_dir IN LISTS _fx_kk_inc)
    if(NOT _fx_dir MATCHES "^\\$<" AND NOT EXISTS "${_fx_dir}")
      set(_fx_kk_ok OFF)
    endif()
  endforeach()
  if(NOT _fx_kk_ok AND EXISTS /usr/include/trilinos/Kokkos_Core.hpp)
    message(STATUS "fx: Kokkos include path '${_fx_kk_inc}' is missing; using /usr/include/trilinos")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES /usr/include/trilinos)
  endif()
endif()

# xxHash (the data store's checksums) as the imported target xxHash::xxhash:
# xxHash's own CMake package when installed, else found by header and
# library (Debian ships neither a CMake package nor a namespace). fx's
# exported targets name this target, never a path, so the package is
# relocatable. FX_XXHASH_FOUND tells the includer.
if(NOT TARGET xxHash::xxhash)
  find_package(xxHash CONFIG QUIET)
endif()
if(NOT TARGET xxHash::xxhash)
  find_path(FX_XXHASH_INCLUDE xxhash.h)
  find_library(FX_XXHASH_LIBRARY xxhash)
  if(FX_XXHASH_INCLUDE AND FX_XXHASH_LIBRARY)
    add_library(xxHash::xxhash UNKNOWN IMPORTED)
    set_target_properties(xxHash::xxhash PROPERTIES IMPORTED_LOCATION "${FX_XXHASH_LIBRARY}"
      INTERFACE_INCLUDE_DIRECTORIES "${FX_XXHASH_INCLUDE}")
  endif()
endif()
if(TARGET xxHash::xxhash)
  set(FX_XXHASH_FOUND ON)
else()
  set(FX_XXHASH_FOUND OFF)
endif()
