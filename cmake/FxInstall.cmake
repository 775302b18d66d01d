include(CMakePackageConfigHelpers)
set(FX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fx)
install(EXPORT fxTargets NAMESPACE fx:: DESTINATION ${FX_CMAKE_DIR})
# fxConfig.cmake looks for the private dependencies of static libraries only.
if(BUILD_SHARED_LIBS)
  set(FX_SHARED_LIBS ON)
else()
  set(FX_SHARED_LIBS OFF)
endif()
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fxConfig.cmake INSTALL_DESTINATION ${FX_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fxConfig.cmake ${PROJECT_BINARY_DIR}/fxConfigVersion.cmake
  ${PROJECT_SOURCE_DIR}/cmake/FxSharedDeps.cmake
  DESTINATION ${FX_CMAKE_DIR})
# The launcher: bin/fx-run runs libexec/fx/launch.sh, which sources the env.sh
# beside it: for an installed fx, one that puts this build's MPI on PATH.
get_filename_component(FX_MPI_BIN_DIR "${MPI_CXX_COMPILER}" DIRECTORY)
configure_file(${PROJECT_SOURCE_DIR}/scripts/installed_env.sh.in ${PROJECT_BINARY_DIR}/installed_env.sh @ONLY)
# launch.sh runs supervise.py beside it for --supervise.
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/launch.sh ${PROJECT_SOURCE_DIR}/scripts/supervise.py
  DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/fx)
install(FILES ${PROJECT_BINARY_DIR}/installed_env.sh DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/fx RENAME env.sh)
# supervise.py imports its policy, fx_files.py (the merged report's
# writes) and hostfile_check.py from beside it; launch.sh runs the last on
# a --hostfile (or the one it writes inside a Slurm allocation).
install(FILES ${PROJECT_SOURCE_DIR}/scripts/fx_files.py ${PROJECT_SOURCE_DIR}/scripts/supervisor_policy.py
  ${PROJECT_SOURCE_DIR}/scripts/hostfile_check.py DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/fx)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/fx-run DESTINATION ${CMAKE_INSTALL_BINDIR})
