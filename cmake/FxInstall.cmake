include(CMakePackageConfigHelpers)
set(FX_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/fx)
install(EXPORT fxTargets NAMESPACE fx:: DESTINATION ${FX_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/fxConfig.cmake.in
  ${PROJECT_BINARY_DIR}/fxConfig.cmake INSTALL_DESTINATION ${FX_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/fxConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/fxConfig.cmake ${PROJECT_BINARY_DIR}/fxConfigVersion.cmake
  DESTINATION ${FX_CMAKE_DIR})
install(PROGRAMS ${PROJECT_SOURCE_DIR}/scripts/launch.sh ${PROJECT_SOURCE_DIR}/scripts/env.sh
  DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/fx)
