# Third-party dependencies. A site MPI/Kokkos is picked up through the usual
# variables (MPI_HOME or the mpicxx on PATH, Kokkos_ROOT).
find_package(MPI REQUIRED COMPONENTS C CXX)
find_package(Threads REQUIRED)  # the data store's snapshot copier

include(CheckSymbolExists)
set(FX_HAVE_ULFM OFF)
if(FX_ENABLE_ULFM)
  set(CMAKE_REQUIRED_INCLUDES ${MPI_C_INCLUDE_DIRS})
  set(CMAKE_REQUIRED_LIBRARIES MPI::MPI_C)
  check_symbol_exists(MPIX_ERR_PROC_FAILED "mpi.h;mpi-ext.h" FX_HAVE_MPIX_ERR_PROC_FAILED)
  foreach(fn Comm_revoke Comm_shrink Comm_agree Comm_iagree
             Comm_get_failed Comm_ack_failed Comm_failure_ack Comm_failure_get_acked)
    string(TOUPPER ${fn} up)
    check_symbol_exists(MPIX_${fn} "mpi.h;mpi-ext.h" FX_HAVE_MPIX_${up})
  endforeach()
  unset(CMAKE_REQUIRED_INCLUDES)
  unset(CMAKE_REQUIRED_LIBRARIES)
  if(FX_HAVE_MPIX_ERR_PROC_FAILED AND FX_HAVE_MPIX_COMM_REVOKE AND FX_HAVE_MPIX_COMM_SHRINK
     AND FX_HAVE_MPIX_COMM_AGREE
     AND (FX_HAVE_MPIX_COMM_GET_FAILED OR FX_HAVE_MPIX_COMM_FAILURE_GET_ACKED))
    set(FX_HAVE_ULFM ON)
  else()
    message(FATAL_ERROR
      "fx: the MPI found (${MPI_CXX_COMPILER}, ${MPI_C_LIBRARIES}) has no ULFM: "
      "mpi-ext.h with MPIX_ERR_PROC_FAILED, MPIX_Comm_revoke/shrink/agree is required. "
      "Use Open MPI >= 5.0 (./fx setup installs one into .venv, or point MPI_HOME / "
      "FX_MPI_HOME at a site build), or configure with -DFX_ENABLE_ULFM=OFF for "
      "pass-through mode, where a process failure ends the job.")
  endif()
endif()
message(STATUS "fx: ULFM ${FX_HAVE_ULFM} (MPI ${MPI_CXX_VERSION}, ${MPI_CXX_COMPILER})")

# PMIx's headers (Debian: libpmix-dev; a site Open MPI's own beside mpi.h),
# for the one event ULFM does not hear: a process that exits with a
# non-zero status (framework/src/job_exits.cpp). Only the types and codes
# come from them; the functions are the PMIx library Open MPI loaded.
# (Without ULFM any exit ends the job already.)
set(FX_HAVE_PMIX_HEADERS OFF)
string(CONCAT _fx_no_pmix "a process that exits with a non-zero status inside the job without running exit handlers "
                       "(_exit) will not be seen")
if(FX_HAVE_ULFM AND NOT FX_ENABLE_PMIX)
  message(STATUS "fx: PMIx off (FX_ENABLE_PMIX=OFF): ${_fx_no_pmix}")
elseif(FX_HAVE_ULFM)
  # A directory given (-DFX_PMIX_INCLUDE_DIR=, Spack's +pmix) must hold
  # pmix.h: find_path takes a set value without looking.
  if(FX_PMIX_INCLUDE_DIR AND NOT EXISTS "${FX_PMIX_INCLUDE_DIR}/pmix.h")
    message(FATAL_ERROR "fx: FX_PMIX_INCLUDE_DIR '${FX_PMIX_INCLUDE_DIR}' has no pmix.h "
                        "(Debian: /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/pmix2/include from libpmix-dev)")
  endif()
  find_path(FX_PMIX_INCLUDE_DIR pmix.h
    HINTS ${MPI_C_INCLUDE_DIRS}
    PATHS /usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/pmix2/include /usr/include/pmix)
  if(FX_PMIX_INCLUDE_DIR)
    set(FX_HAVE_PMIX_HEADERS ON)
    message(STATUS "fx: PMIx headers ${FX_PMIX_INCLUDE_DIR}: a process's non-zero exit inside the job ends it")
  else()
    message(STATUS "fx: no PMIx headers (pmix.h; Debian: libpmix-dev): ${_fx_no_pmix}")
  endif()
endif()

find_package(Kokkos REQUIRED)
include(FxSharedDeps)  # the Kokkos include fix-up and xxHash::xxhash
if(NOT FX_XXHASH_FOUND)
  message(FATAL_ERROR "fx needs xxHash (xxhash.h, libxxhash): install libxxhash-dev")
endif()

find_package(yaml-cpp REQUIRED)
if(TARGET yaml-cpp::yaml-cpp)
  set(FX_YAML_TARGET yaml-cpp::yaml-cpp)
else()
  set(FX_YAML_TARGET yaml-cpp)   # Debian's 0.7 exports no namespace
endif()
find_package(spdlog REQUIRED)
find_package(fmt REQUIRED)
find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND)
  find_path(FX_CLI11_INCLUDE CLI/CLI.hpp REQUIRED)
  add_library(CLI11::CLI11 INTERFACE IMPORTED)
  target_include_directories(CLI11::CLI11 INTERFACE ${FX_CLI11_INCLUDE})
endif()
if(FX_ENABLE_HDF5)
  find_package(HDF5 REQUIRED COMPONENTS C)
endif()
