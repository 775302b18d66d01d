# fx_add_module(<target> SOURCES ... [PUBLIC_DEPS ...] [PRIVATE_DEPS ...]
#               [INTERNAL_DEPS ...])
# One library per module: public headers in include/ (installed), internal
# headers in private/ (never installed), code in src/. A module with a
# private/ directory also gets <target>_internal, an in-tree INTERFACE target
# (not installed, not exported) that other modules, tests and benches link to
# include those headers under their usual paths (<fx/recovery/ulfm.hpp>).
# INTERNAL_DEPS names such targets this module's own code needs; they stay
# out of the installed package.
set(FX_WARNING_FLAGS -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor)
function(fx_project_warnings target)
  target_compile_options(${target} PRIVATE ${FX_WARNING_FLAGS}
    $<$<BOOL:${FX_WARNINGS_AS_ERRORS}>:-Werror>)
endfunction()

function(fx_add_module target)
  cmake_parse_arguments(arg "" "" "SOURCES;PUBLIC_DEPS;PRIVATE_DEPS;INTERNAL_DEPS" ${ARGN})
  add_library(${target} ${arg_SOURCES})
  add_library(fx::${target} ALIAS ${target})
  set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>
    PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/src)
  target_compile_features(${target} PUBLIC cxx_std_17)
  target_link_libraries(${target} PUBLIC ${arg_PUBLIC_DEPS} PRIVATE ${arg_PRIVATE_DEPS})
  foreach(dep IN LISTS arg_INTERNAL_DEPS)
    target_link_libraries(${target} PRIVATE $<BUILD_INTERFACE:${dep}>)
  endforeach()
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/private)
    target_include_directories(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/private)
    add_library(${target}_internal INTERFACE)
    target_include_directories(${target}_internal INTERFACE $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/private>)
    target_link_libraries(${target}_internal INTERFACE ${target} ${arg_INTERNAL_DEPS})
  endif()
  fx_project_warnings(${target})
  install(TARGETS ${target} EXPORT fxTargets
    ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/include)  # a module may have no public headers yet
    install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
  endif()
endfunction()

# Add every immediate subdirectory that has a CMakeLists.txt, in name order:
# each area (a mini-app, a test family, a benchmark) owns one.
function(fx_add_subdirectories)
  file(GLOB children LIST_DIRECTORIES true RELATIVE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/*)
  list(SORT children)
  foreach(child IN LISTS children)
    if(IS_DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/${child} AND EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/${child}/CMakeLists.txt)
      add_subdirectory(${child})
    endif()
  endforeach()
endfunction()
