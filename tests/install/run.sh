#!/usr/bin/env bash
# run.sh CMAKE BUILD_DIR WORK_DIR [cmake args for the consumer...]
# Install the fx build tree to WORK_DIR/prefix, then configure, build and
# run tests/install/consumer against it with find_package(fx CONFIG).
set -euo pipefail
cmake_bin=$1; build=$2; work=$3; shift 3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$cmake_bin" --install "$build" --prefix "$work/prefix" >"$work/install.log" \
  || { cat "$work/install.log"; exit 1; }
# Only the prefix: the fx build tree must not leak into the consumer.
"$cmake_bin" -S "$here/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release "$@"
"$cmake_bin" --build "$work/build"

# Run it through the installed launcher only (no repository script): once
# failure-free, once with logical rank 1 killed at step 12 (a spare takes
# over from the in-memory checkpoint). Verdicts 0 and 3, the same answer.
app=$work/build/fx_consumer
run=$work/prefix/bin/fx-run
export FX_CFG_CHECKPOINT__MEMORY__EVERY=5
FX_INJECT= "$run" -n 3 -s 1 -t 60 "$app" > "$work/clean.out" 2>&1 || { cat "$work/clean.out"; exit 1; }
rc=0
FX_INJECT=1@12 "$run" -n 3 -s 1 -t 60 "$app" > "$work/kill.out" 2>&1 || rc=$?
[ "$rc" -eq 3 ] || { cat "$work/kill.out"; echo "install: killed run exited $rc, expected 3" >&2; exit 1; }
want=$(grep -o 'sum [0-9]*' "$work/clean.out")
got=$(grep -o 'sum [0-9]*' "$work/kill.out")
[ -n "$want" ] && [ "$want" = "$got" ] ||
  { echo "install: answer after the kill '$got' differs from the failure-free '$want'" >&2; exit 1; }
echo "install: fx-run ran the consumer: failure-free exit 0, killed rank survived with exit 3, $got both times"
