#!/usr/bin/env bash
# expect_exit.sh CODE command...: succeed iff the command exits with CODE.
want=$1; shift
"$@"; rc=$?
if [ "$rc" -ne "$want" ]; then
  echo "expect_exit: '$*' exited with $rc, expected $want" >&2
  exit 1
fi
exit 0
