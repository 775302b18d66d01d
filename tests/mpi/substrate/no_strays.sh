#!/bin/sh
# no_strays.sh EXE: fail if a process of EXE is still running. The pattern
# is anchored at the start of the command line, so this script (which has
# EXE only as an argument) does not match itself.
exe=$1
sleep 1
if pgrep -f "^$exe( |\$)" >/dev/null; then
  echo "stray processes of $exe:" >&2
  pgrep -af "^$exe( |\$)" >&2
  exit 1
fi
exit 0
