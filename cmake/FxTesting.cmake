# Test helpers. fx_add_mpi_test is the one way to add a multi-rank test:
#
#   fx_add_mpi_test(<name> NP <active ranks> TIMEOUT <seconds>
#                   [SPARES <s>] [LABELS ...] [TARGET <exe>] [ARGS ...]
#                   [INJECT <spec>] [SETTINGS <key=value> ...] [ENV VAR=value ...]
#                   [EXPECT_EXIT <code>] [EXPECT_LOG <regex> ...] [EXPECT_NO_LOG <regex> ...]
#                   [EXPECT_REPORT <assertion> ...] [EXPECT_END_WITHIN <seconds>]
#                   [REPEAT <n>] [KILL_RANK_WITHIN <seconds>] [EXPECT_LOG_IF <code> <regex> ...]
#                   [FIXTURES_SETUP ...] [FIXTURES_REQUIRED ...] [FIXTURES_CLEANUP ...]
#                   [BASELINE <exe> [BASELINE_ARGS ...] [BASELINE_NP <n>] [RTOL <key=tol,...>]]
#                   [LAUNCH_ARGS <launcher options> ...]
#                   [HOSTS <n> [SPARE_HOSTS <k>] [SLURM] [FRESH_DIR <dir>] [HOST_EVENTS "WHEN|ACTION|HOST" ...]])
#
# It runs through scripts/launch.sh (mpiexec --with-ft ulfm, oversubscribed)
# whose own time limit fires a few seconds before CTest's, so a hang kills
# every rank and fails the test. TARGET defaults to <name>. INJECT is fx's
# injection language (FX_INJECT: "1@12|2@repair", docs/config.md); SETTINGS
# are configuration keys (checkpoint.memory.every=5 becomes
# FX_CFG_CHECKPOINT__MEMORY__EVERY=5). EXPECT_EXIT checks the launcher's
# verdict code (docs/architecture.md), default 0; EXPECT_LOG regexes
# (extended) must each match a line of the output, EXPECT_NO_LOG ones none
# (a line every rank said that one rank must say); EXPECT_REPORT writes the
# run report to the build tree and checks it with scripts/check_report.py
# (count:failures=2, eq:exit.code=3, has:PATH, ...); EXPECT_END_WITHIN
# bounds the time from the app's last stamped step (FX_PROGRESS_FILE, every
# 0.5 s) to the launcher's exit. REPEAT runs the whole check n times
# (TIMEOUT is then each run's); KILL_RANK_WITHIN kills one rank with SIGKILL
# from outside at a random time in each run's first seconds, EXPECT_EXIT
# may then list codes ("3|4"), and EXPECT_LOG_IF pairs a code with a regex
# that must match when the run exits with it. The test holds
# NP + SPARES processors (ctest -j). Several calls sharing defaults put
# them in a variable: fx_add_mpi_test(x ${_ring} INJECT 2@12); a later
# single-value keyword wins, list keywords add up.
#
# HOSTS: the multi-host form (label multihost): the launcher spreads the
# ranks over n fresh test hosts (scripts/testhosts.sh, made and removed by
# scripts/with_testhosts.sh, which also fails the test when a process is
# left on a host), the last SPARE_HOSTS kept for `--supervise --spare-hosts`;
# HOST_EVENTS lose hosts at a deterministic point ("file:GLOB|kill|host2":
# once a file such as a checkpoint's manifest exists; "stopped|kill|host2":
# once a process there froze at an injected SIGSTOP; "...|kill|host1,host2":
# both together), one after the other. SLURM: Slurm runs on the test hosts
# too and the launcher runs inside an allocation of all n (salloc), taking
# its nodes from SLURM_JOB_NODELIST (no hostfile). Skipped (77) where test
# hosts (or, with SLURM, Slurm and munge) cannot be made.
#
# BASELINE: the end-to-end form (tests/e2e/miniapps/run_case.sh). The plain
# baseline runs failure-free on BASELINE_NP (default NP) ranks, then the
# test as above (two launches share TIMEOUT), and every `result:` line must
# agree bitwise, or to RTOL for the keys it names.
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
  cmake_parse_arguments(arg "SLURM" "NP;SPARES;TIMEOUT;TARGET;EXPECT_EXIT;INJECT;BASELINE;BASELINE_NP;RTOL;HOSTS;SPARE_HOSTS;FRESH_DIR;EXPECT_END_WITHIN;REPEAT;KILL_RANK_WITHIN"
    "LABELS;ARGS;ENV;SETTINGS;EXPECT_LOG;EXPECT_LOG_IF;EXPECT_NO_LOG;EXPECT_REPORT;FIXTURES_SETUP;FIXTURES_REQUIRED;FIXTURES_CLEANUP;BASELINE_ARGS;LAUNCH_ARGS;HOST_EVENTS"
    ${ARGN})
  foreach(req NP TIMEOUT)
    if(NOT arg_${req})
      message(FATAL_ERROR "fx_add_mpi_test(${name}): ${req} is required")
    endif()
  endforeach()
  if(arg_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): unexpected arguments '${arg_UNPARSED_ARGUMENTS}'")
  endif()
  if(arg_SLURM AND NOT arg_HOSTS)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): SLURM needs HOSTS <n> (the allocation is over the test hosts)")
  endif()
  if(NOT arg_SPARES)
    set(arg_SPARES 0)
  endif()
  if(NOT arg_TARGET)
    set(arg_TARGET ${name})
  endif()
  if(NOT DEFINED arg_EXPECT_EXIT)
    set(arg_EXPECT_EXIT 0)
  endif()
  set(env)
  foreach(kv IN LISTS arg_SETTINGS)
    string(FIND "${kv}" "=" eq)
    if(eq LESS 1)
      message(FATAL_ERROR "fx_add_mpi_test(${name}): SETTINGS expects key=value, got '${kv}'")
    endif()
    string(SUBSTRING "${kv}" 0 ${eq} key)
    string(SUBSTRING "${kv}" ${eq} -1 value)
    string(TOUPPER "${key}" key)
    string(REPLACE "." "__" key "${key}")
    list(APPEND env "FX_CFG_${key}${value}")
  endforeach()
  list(APPEND env ${arg_ENV})
  if(arg_BASELINE)
    _fx_baseline_command(command)
  else()
    if(DEFINED arg_INJECT)
      list(APPEND env "FX_INJECT=${arg_INJECT}")
    endif()
    _fx_launch_command(command)
  endif()
  if(arg_HOSTS)
    _fx_hosts_command(command)
  endif()
  add_test(NAME ${name} COMMAND ${command})
  math(EXPR procs "${arg_NP} + ${arg_SPARES}")
  set(timeout ${arg_TIMEOUT})
  if(arg_REPEAT)
    math(EXPR timeout "${arg_TIMEOUT} * ${arg_REPEAT}")
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} PROCESSORS ${procs}
    LABELS "mpi;${arg_LABELS}" ENVIRONMENT "${env}")
  if(arg_HOSTS)
    # 77: no root / ip netns / sshd here. Started first: they wait more than they compute.
    set_tests_properties(${name} PROPERTIES LABELS "mpi;multihost;${arg_LABELS}" SKIP_RETURN_CODE 77 COST 20)
  endif()
  foreach(kind SETUP REQUIRED CLEANUP)
    if(arg_FIXTURES_${kind})
      set_tests_properties(${name} PROPERTIES FIXTURES_${kind} "${arg_FIXTURES_${kind}}")
    endif()
  endforeach()
endfunction()

# fx_stale_session_fixture(<fixture> <dir>): tests <fixture>_make and
# <fixture>_check around the tests that require <fixture>. DIR holds the
# Open MPI session directories that killed launches with the next 5000
# process ids would have left (tests/support/stale_session_dirs.py); the
# check fails when anything else is left in it.
function(fx_stale_session_fixture fixture dir)
  set(tool ${PROJECT_SOURCE_DIR}/tests/support/stale_session_dirs.py)
  add_test(NAME ${fixture}_make COMMAND ${tool} make ${dir} 5000)
  add_test(NAME ${fixture}_check COMMAND ${tool} check ${dir})
  set_tests_properties(${fixture}_make PROPERTIES FIXTURES_SETUP ${fixture} LABELS mpi)
  set_tests_properties(${fixture}_check PROPERTIES FIXTURES_CLEANUP ${fixture} LABELS mpi)
endfunction()

# HOSTS: the command runs on that many fresh test hosts of its own
# (scripts/with_testhosts.sh: SPARE_HOSTS, SLURM, FRESH_DIR, HOST_EVENTS given
# as "WHEN|ACTION|HOST"), which checks that no process is left on them.
macro(_fx_hosts_command out)
  # A set of test hosts of its own (names fx<aa..>N, subnet 10.232.<k>), so
  # multi-host tests run side by side under ctest -j.
  get_property(k GLOBAL PROPERTY FX_TESTHOST_SETS)
  if(NOT k)
    set(k 0)
  endif()
  math(EXPR first "97 + ${k} / 26")
  math(EXPR second "97 + ${k} % 26")
  string(ASCII ${first} ${second} letters)
  list(APPEND env "FX_TESTHOSTS_PREFIX=fx${letters}" "FX_TESTHOSTS_NET=10.232.${k}")
  math(EXPR k "${k} + 1")
  if(k GREATER 255)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): more than 255 multi-host tests (one /24 each)")
  endif()
  set_property(GLOBAL PROPERTY FX_TESTHOST_SETS ${k})
  set(hosts_args ${arg_HOSTS})
  if(arg_SPARE_HOSTS)
    list(APPEND hosts_args --spare-hosts ${arg_SPARE_HOSTS})
  endif()
  if(arg_SLURM)
    list(APPEND hosts_args --slurm)
  endif()
  if(arg_FRESH_DIR)
    list(APPEND hosts_args --fresh-dir ${arg_FRESH_DIR})
  endif()
  foreach(ev IN LISTS arg_HOST_EVENTS)
    string(REPLACE "|" ";" ev "${ev}")
    list(APPEND hosts_args --event ${ev})
  endforeach()
  set(${out} ${PROJECT_SOURCE_DIR}/scripts/with_testhosts.sh ${hosts_args} -- ${${out}})
endmacro()

# fx_add_mpi_test's command through expect_exit.sh (reads its caller's arg_*).
# The launcher's limit fires first (test hosts take a few seconds to make and
# remove; under --supervise it bounds every attempt together).
macro(_fx_launch_command out)
  set(margin 8)
  if(arg_HOSTS)
    set(margin 16)
  endif()
  math(EXPR inner "${arg_TIMEOUT} - ${margin}")
  if(inner LESS 5)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): TIMEOUT ${arg_TIMEOUT} leaves the launcher under 5 s")
  endif()
  set(logs)
  foreach(re IN LISTS arg_EXPECT_LOG)
    list(APPEND logs --log ${re})
  endforeach()
  foreach(re IN LISTS arg_EXPECT_NO_LOG)
    list(APPEND logs --no-log ${re})
  endforeach()
  if(arg_EXPECT_REPORT)
    list(APPEND logs --report ${CMAKE_CURRENT_BINARY_DIR}/${name}.report.yaml)
    foreach(check IN LISTS arg_EXPECT_REPORT)
      list(APPEND logs --check ${check})
    endforeach()
  endif()
  if(arg_EXPECT_END_WITHIN)
    list(APPEND logs --ended-within ${arg_EXPECT_END_WITHIN} ${CMAKE_CURRENT_BINARY_DIR}/${name}.progress)
  endif()
  set(pair)
  foreach(item IN LISTS arg_EXPECT_LOG_IF)
    list(APPEND pair ${item})
    list(LENGTH pair len)
    if(len EQUAL 2)
      list(APPEND logs --log-if ${pair})
      set(pair)
    endif()
  endforeach()
  if(arg_KILL_RANK_WITHIN)
    list(APPEND logs --kill-rank-within ${arg_KILL_RANK_WITHIN})
  endif()
  set(repeat)
  if(arg_REPEAT)
    set(repeat --repeat ${arg_REPEAT})
  endif()
  set(${out} ${PROJECT_SOURCE_DIR}/scripts/expect_exit.sh ${repeat} ${arg_EXPECT_EXIT} ${logs} --
             ${FX_LAUNCHER} ${arg_LAUNCH_ARGS} -n ${arg_NP} -s ${arg_SPARES} -t ${inner}
             -- $<TARGET_FILE:${arg_TARGET}> ${arg_ARGS})
endmacro()

# fx_add_mpi_test's BASELINE command through run_case.sh, which takes the
# log regex and the report checks from its environment.
macro(_fx_baseline_command out)
  if(arg_EXPECT_LOG OR arg_EXPECT_REPORT)
    message(FATAL_ERROR "fx_add_mpi_test(${name}): with BASELINE, give E2E_EXPECT_LOG/E2E_EXPECT_REPORT in ENV")
  endif()
  foreach(opt INJECT RTOL)
    if(NOT DEFINED arg_${opt} OR "${arg_${opt}}" STREQUAL "")
      set(arg_${opt} -)
    endif()
  endforeach()
  if(arg_BASELINE_NP)
    list(APPEND env E2E_REF_NP=${arg_BASELINE_NP})
  endif()
  math(EXPR limit "(${arg_TIMEOUT} - 6) / 2")
  set(${out} ${PROJECT_SOURCE_DIR}/tests/e2e/miniapps/run_case.sh ${CMAKE_CURRENT_BINARY_DIR}/${name}
             ${arg_EXPECT_EXIT} ${arg_NP} ${arg_SPARES} ${limit} ${arg_INJECT} ${arg_RTOL}
             -- $<TARGET_FILE:${arg_BASELINE}> ${arg_BASELINE_ARGS}
             -- $<TARGET_FILE:${arg_TARGET}> ${arg_ARGS})
endmacro()
