#!/usr/bin/env bash
# expect_exit.sh CODE [--log REGEX]... [--report FILE [--check ASSERTION]...] [--] command...
# Succeed iff the command exits with CODE, its output (stdout and stderr
# together) has a line matching each extended REGEX, and the run report FILE
# (exported as FX_REPORT) passes each scripts/check_report.py ASSERTION.
want=$1; shift
logs=(); report=""; checks=()
while [ $# -gt 0 ]; do
  case "$1" in
    --log) logs+=("$2"); shift 2 ;;
    --report) report=$2; shift 2 ;;
    --check) checks+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
if [ -n "$report" ]; then
  rm -f "$report"
  export FX_REPORT=$report
fi
if [ ${#logs[@]} -eq 0 ]; then
  "$@"; rc=$?
else
  out=$(mktemp "${TMPDIR:-/tmp}/fx-expect.XXXXXX")
  trap 'rm -f "$out"' EXIT
  "$@" > >(tee -a "$out") 2> >(tee -a "$out" >&2); rc=$?
  wait  # the tees
fi
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
if [ -n "$report" ]; then
  "$(dirname "${BASH_SOURCE[0]}")/check_report.py" "$report" "${checks[@]}" || exit 1
fi
exit 0
