#!/usr/bin/env bash
# expect_exit.sh CODE [--log REGEX]... [--report FILE [--check ASSERTION]...]
#                [--ended-within SECONDS FILE] [--] command...
# Succeed iff the command exits with CODE, its output (stdout and stderr
# together) has a line matching each extended REGEX, the run report FILE
# (exported as FX_REPORT) passes each scripts/check_report.py ASSERTION, and
# the command ended within SECONDS of the newest step stamped in FILE
# (exported as FX_PROGRESS_FILE: "<iteration> <CLOCK_MONOTONIC time>").
want=$1; shift
logs=(); report=""; checks=(); within=""; progress=""
while [ $# -gt 0 ]; do
  case "$1" in
    --log) logs+=("$2"); shift 2 ;;
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
if [ ${#logs[@]} -eq 0 ]; then
  "$@"; rc=$?
else
  out=$(mktemp "${TMPDIR:-/tmp}/fx-expect.XXXXXX")
  trap 'rm -f "$out"' EXIT
  "$@" > >(tee -a "$out") 2> >(tee -a "$out" >&2); rc=$?
  wait  # the tees
fi
ended=$(/usr/bin/python3 -c 'import time; print(time.monotonic())')
if [ "$rc" -ne "$want" ]; then
  echo "expect_exit: '$*' exited with $rc, expected $want" >&2
  exit 1
fi
for re in "${logs[@]}"; do
  if ! grep -Eq -- "$re" "$out"; then
    echo "expect_exit: no output line matches '$re'" >&2
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
