#!/usr/bin/env bash
# The substrate demo (until the stencil mini-app takes over ./fx demo):
# 4 active ranks + 2 spares run an MPI_Allreduce loop; world rank 3 is
# killed with SIGKILL at iteration 40; the survivors revoke and shrink, a
# spare takes logical rank 3 (split keyed by logical rank) and the loop
# resumes where it stopped. Prints detection and repair timings.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/env.sh"
prog="$FX_BUILD_DIR/bench/substrate/substrate_bench"
[ -x "$prog" ] || { echo "fx demo: $prog is not built; run ./fx build" >&2; exit 2; }

echo "fx demo: 4 ranks + 2 spares, ULFM on (mpiexec --with-ft ulfm); rank 3 dies at iteration 40"
"$root/scripts/launch.sh" -n 4 -s 2 -t 120 -- "$prog" --demo --iterations 100 --kill-iteration 40 \
  --victim 3 --step-ms 20 "$@"
rc=$?
case "$rc" in
  3) echo "fx demo: launcher status 3 (finished correctly after surviving a failure)"; exit 0 ;;
  0) echo "fx demo: launcher status 0 (no failure happened?)"; exit 0 ;;
  *) echo "fx demo: launcher status $rc (see docs/user-guide.md: "Exit codes")" >&2; exit "$rc" ;;
esac
