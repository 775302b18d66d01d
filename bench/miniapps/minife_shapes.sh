#!/usr/bin/env bash
# What minife's per-shape drivers (minife_overhead.sh,
# minife_instructions.sh) share; sourced after scripts/env.sh.
#
# minife_exe VARIANT: prints the fx app (fx) or its plain baseline
# (baseline) of FX_BUILD_DIR; status 1, and a message, when it is not built
# (called as $(minife_exe ...) || exit 1).
minife_exe() {
  local exe=$FX_BUILD_DIR/miniapps/minife/minife
  [ "$1" = fx ] || exe+=_baseline
  [ -x "$exe" ] || { echo "bench: $exe not built" >&2; exit 1; }
  echo "$exe"
}

# minife_shape SHAPE ARGS_ARRAY: SHAPE is `default:P` (the app's default
# problem on P ranks) or `N:P` (problem minife, N^3 elements, P ranks);
# appends the problem's options to the array named.
minife_shape() {
  local -n shape_args=$2
  local n=${1%%:*}
  [ "$n" = default ] || shape_args+=(--problem minife --nx "$n" --ny "$n" --nz "$n" --verify-solution false)
}
