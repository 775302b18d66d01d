#!/usr/bin/env bash
# expect_exit.sh [--repeat N] CODE [--log REGEX]... [--log-if CODE REGEX]... [--no-log REGEX]...
#                [--report FILE [--check ASSERTION]...]
#                [--ended-within SECONDS FILE] [--kill-rank-within SECONDS] [--] command...
# Succeed iff the command exits with CODE (or one of "3|4"), its output
# (stdout and stderr together) has a line matching each extended REGEX (with
# --log-if only when it exited with that CODE) and none matching a
# --no-log REGEX (e.g. a line said by every rank that one rank must say), the run report FILE
# (exported as FX_REPORT) passes each scripts/check_report.py ASSERTION, and
# the command ended within SECONDS of the newest step stamped in FILE
# (exported as FX_PROGRESS_FILE: "<iteration> <CLOCK_MONOTONIC time>").
# --kill-rank-within: an external SIGKILL of one MPI rank of the command
# (one of its processes with PMIX_RANK set), at a random time in its first
# SECONDS (the first rank to appear when none had yet). --repeat: all of it
# N times (each run's exit counted at the end); the first failed run fails.
if [ "${1:-}" = "--repeat" ]; then
  runs=$2; shift 2
  EXPECT_EXIT_TALLY=$(mktemp "${TMPDIR:-/tmp}/fx-expect-tally.XXXXXX")
  export EXPECT_EXIT_TALLY
  trap 'rm -f "$EXPECT_EXIT_TALLY"' EXIT
  t0=$SECONDS
  for ((i = 1; i <= runs; i++)); do
    echo "expect_exit: run $i of $runs"
    "$0" "$@" || { echo "expect_exit: run $i of $runs failed" >&2; exit 1; }
  done
  echo "expect_exit: $runs runs in $((SECONDS - t0)) s, exit codes: $(sort -n "$EXPECT_EXIT_TALLY" | uniq -c | awk '{printf "%s%s x%s", (NR > 1 ? ", " : ""), $2, $1}')"
  exit 0
fi
want=$1; shift
logs=(); logs_if=(); nologs=(); report=""; checks=(); within=""; progress=""; kill_within=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log) logs+=("$2"); shift 2 ;;
    --log-if) logs_if+=("$2" "$3"); shift 3 ;;
    --no-log) nologs+=("$2"); shift 2 ;;
    --kill-rank-within) kill_within=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    --check) checks+=("$2"); shift 2 ;;
    --ended-within) within=$2; progress=$3; shift 3 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [ -n "$report" ]; then
  rm -f "$report"
  export FX_REPORT=$report
fi
if [ -n "$progress" ]; then
  rm -f "$progress"
  export FX_PROGRESS_FILE=$progress
fi
killer=""
if [ -n "$kill_within" ]; then
  # The command's ranks carry this tag (mpiexec passes the environment on).
  export EXPECT_EXIT_RUN="$$.$RANDOM"
  (
    delay=$(awk -v r="$RANDOM" -v w="$kill_within" 'BEGIN{printf "%.3f", r / 32768 * w}')
    sleep "$delay"
    for ((poll = 0; poll < 3000; poll++)); do
      victims=()
      # shellcheck disable=SC2013  # /proc paths: one word each
      for f in $(grep -lz "^EXPECT_EXIT_RUN=$EXPECT_EXIT_RUN\$" /proc/[0-9]*/environ 2>/dev/null); do
        grep -qz '^PMIX_RANK=' "$f" 2>/dev/null && victims+=("$(basename "$(dirname "$f")")")
      done
      if [ ${#victims[@]} -gt 0 ]; then
        victim=${victims[RANDOM % ${#victims[@]}]}
        kill -KILL "$victim" 2>/dev/null &&
          echo "expect_exit: killed rank pid $victim (SIGKILL) ${delay} s after the start$([ "$poll" -gt 0 ] && echo ", once it existed")"
        exit 0
      fi
      sleep 0.02
    done
  ) &
  killer=$!
fi
# The killer has nothing left to kill once the command ended.
stop_killer() { [ -z "$killer" ] || { kill "$killer" 2>/dev/null; wait "$killer" 2>/dev/null; killer=""; }; }
if [ ${#logs[@]} -eq 0 ] && [ ${#logs_if[@]} -eq 0 ] && [ ${#nologs[@]} -eq 0 ]; then
  "$@"; rc=$?
  stop_killer
else
  out=$(mktemp "${TMPDIR:-/tmp}/fx-expect.XXXXXX")
  trap 'rm -f "$out"' EXIT
  "$@" > >(tee -a "$out") 2> >(tee -a "$out" >&2); rc=$?
  stop_killer
  wait  # the tees
fi
ended=$(/usr/bin/python3 -c 'import time; print(time.monotonic())')
[ -n "${EXPECT_EXIT_TALLY:-}" ] && echo "$rc" >>"$EXPECT_EXIT_TALLY"
if ! [[ "$rc" =~ ^($want)$ ]]; then
  echo "expect_exit: '$*' exited with $rc, expected $want" >&2
  exit 1
fi
for ((i = 0; i < ${#logs_if[@]}; i += 2)); do
  [ "$rc" = "${logs_if[i]}" ] && logs+=("${logs_if[i + 1]}")
done
for re in "${logs[@]}"; do
  if ! grep -Eq -- "$re" "$out"; then
    echo "expect_exit: no output line matches '$re'" >&2
    exit 1
  fi
done
for re in "${nologs[@]}"; do
  if grep -Eq -- "$re" "$out"; then
    echo "expect_exit: an output line matches '$re', which must not appear: $(grep -Em1 -- "$re" "$out")" >&2
    exit 1
  fi
done
if [ -n "$progress" ]; then
  read -r _ stamped _ < "$progress" 2>/dev/null
  if [ -z "${stamped:-}" ]; then
    echo "expect_exit: no step was stamped in '$progress'" >&2
    exit 1
  fi
  after=$(awk "BEGIN{printf \"%.2f\", $ended - $stamped}")
  echo "expect_exit: ended ${after} s after the last stamped step (bound ${within} s)"
  if ! awk "BEGIN{exit !($after <= $within)}"; then
    echo "expect_exit: ended ${after} s after the last stamped step, more than ${within} s" >&2
    exit 1
  fi
fi
if [ -n "$report" ]; then
  "$(dirname "${BASH_SOURCE[0]}")/check_report.py" "$report" "${checks[@]}" || exit 1
fi
exit 0
