# Test helpers. fx_add_mpi_test is the one way to add a multi-rank test:
#
#   fx_add_mpi_test(<name> NP <active ranks> TIMEOUT <seconds>
#                   [SPARES <s>] [LABELS ...] [TARGET <exe>] [ARGS ...]
#                   [ENV VAR=value ...] [EXPECT_EXIT <code>]
#                   [EXPECT_LOG <regex> ...] [EXPECT_REPORT <assertion> ...])
#
# It runs through scripts/launch.sh (mpiexec --with-ft ulfm, oversubscribed)
# whose own time limit fires a few seconds before CTest's, so a hang kills
# every rank and fails the test. TARGET defaults to <name>. EXPECT_EXIT
# checks the launcher's verdict code (docs/architecture.md), default 0;
# EXPECT_LOG regexes (extended) must each match a line of the output;
# EXPECT_REPORT writes the run report to the build tree and checks it with
# scripts/check_report.py (count:failures=2, eq:exit.code=3, has:PATH, ...).
find_package(GTest REQUIRED)
set(FX_LAUNCHER ${PROJECT_SOURCE_DIR}/scripts/launch.sh)

function(fx_add_unit_test name)
  cmake_parse_arguments(arg "" "TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${arg_SOURCES})
  target_link_libraries(${name} PRIVATE ${arg_LIBS} GTest::gtest GTest::gtest_main)
  fx_project_warnings(${name})
  if(NOT arg_TIMEOUT)
    set(arg_TIMEOUT 60)
  endif()
  add_test(NAME ${name} COMMAND ${name})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT} LABELS "unit;${arg_LABELS}")
endfunction()

function(fx_add_mpi_test name)
  cmake_parse_arguments(arg "" "NP;SPARES;TIMEOUT;TARGET;EXPECT_EXIT" "LABELS;ARGS;ENV;EXPECT_LOG;EXPECT_REPORT" ${ARGN})
  foreach(req NP TIMEOUT)
    if(NOT arg_${req})
      message(FATAL_ERROR "fx_add_mpi_test(${name}): ${req} is required")
    endif()
  endforeach()
  if(NOT arg_SPARES)
    set(arg_SPARES 0)
  endif()
  if(NOT arg_TARGET)
    set(arg_TARGET ${name})
  endif()
  if(NOT DEFINED arg_EXPECT_EXIT)
    set(arg_EXPECT_EXIT 0)
  endif()
  math(EXPR inner "${arg_TIMEOUT} - 8")
  if(inner LESS 5)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): TIMEOUT ${arg_TIMEOUT} is below the minimum 13")
  endif()
  set(logs)
  foreach(re IN LISTS arg_EXPECT_LOG)
    list(APPEND logs --log ${re})
  endforeach()
  if(arg_EXPECT_REPORT)
    list(APPEND logs --report ${CMAKE_CURRENT_BINARY_DIR}/${name}.report.yaml)
    foreach(check IN LISTS arg_EXPECT_REPORT)
      list(APPEND logs --check ${check})
    endforeach()
  endif()
  add_test(NAME ${name}
    COMMAND ${PROJECT_SOURCE_DIR}/scripts/expect_exit.sh ${arg_EXPECT_EXIT} ${logs} --
            ${FX_LAUNCHER} -n ${arg_NP} -s ${arg_SPARES} -t ${inner}
            -- $<TARGET_FILE:${arg_TARGET}> ${arg_ARGS})
  set_tests_properties(${name} PROPERTIES TIMEOUT ${arg_TIMEOUT}
    LABELS "mpi;${arg_LABELS}" ENVIRONMENT "${arg_ENV}")
endfunction()
