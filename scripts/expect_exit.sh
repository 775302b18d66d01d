#!/usr/bin/env bash
# expect_exit.sh CODE [--log REGEX]... [--] command...
# Succeed iff the command exits with CODE and its output (stdout and stderr
# together) has a line matching each extended REGEX.
want=$1; shift
logs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --log) logs+=("$2"); shift 2 ;;
    --) shift; break ;;
    *) break ;;
  esac
done
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
exit 0
