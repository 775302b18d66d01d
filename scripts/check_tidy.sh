#!/usr/bin/env bash
# check_tidy.sh [BUILD_DIR] [FILE...]: clang-tidy (.clang-tidy's curated
# checks, every warning an error) over the library sources, in parallel.
# Without FILEs: every library source, as the unity batches of a tree
# configured beside BUILD_DIR (BUILD_DIR/tidy-unity, same compiler, Kokkos
# and options; nothing built): a batch reads and matches the headers
# (Kokkos, the standard library) once for up to 8 sources, where a source
# alone repeats them (11 batches for 52 sources: 116 s of CPU against about 730).
# With FILEs: those, alone, with BUILD_DIR's compile_commands.json
# (default build/). The test tidy_check runs it beside format_check (label style).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) ||
  { echo "check_tidy: clang-tidy (14) not found; run ./fx setup" >&2; exit 1; }
build=${1:-${FX_BUILD_DIR:-$root/build}}
shift || true
[ -f "$build/compile_commands.json" ] ||
  { echo "check_tidy: $build/compile_commands.json not found (configure first: ./fx build)" >&2; exit 1; }
commands=$build extra=()
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t sources < <(git ls-files 'core/src/*.cpp' 'recovery/src/*.cpp' 'spares/src/*.cpp' \
    'data-store/src/*.cpp' 'framework/src/*.cpp')
  cached() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
  commands=$build/tidy-unity
  cmake -S "$root" -B "$commands" -DCMAKE_UNITY_BUILD=ON -DFX_BUILD_TESTS=OFF -DFX_BUILD_MINIAPPS=OFF \
    -DFX_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE="$(cached CMAKE_BUILD_TYPE)" \
    -DCMAKE_CXX_COMPILER="$(cached CMAKE_CXX_COMPILER)" -DKokkos_DIR="$(cached Kokkos_DIR)" \
    -DFX_ENABLE_ULFM="$(cached FX_ENABLE_ULFM)" -DFX_ENABLE_HDF5="$(cached FX_ENABLE_HDF5)" >"$commands.log" 2>&1 ||
    { tail -n 20 "$commands.log" >&2; echo "check_tidy: configuring $commands failed" >&2; exit 1; }
  mapfile -t files < <(find "$commands" -path '*/Unity/unity_*_cxx.cxx' | sort)
  # Each source is in some batch, or compiled alone (SKIP_UNITY_BUILD_INCLUSION,
  # as framework/src/job_exits.cpp) and then checked alone: none is missed.
  for s in "${sources[@]}"; do
    grep -qF "$root/$s\"" "${files[@]}" && continue
    grep -qF "\"file\": \"$root/$s\"" "$commands/compile_commands.json" ||
      { echo "check_tidy: $s is in no unity batch of $commands, nor compiled alone" >&2; exit 1; }
    files+=("$root/$s")
  done
  # A batch includes its sources, which bugprone-suspicious-include flags:
  # off there, and its meaning (no source includes a source) checked here.
  extra=(--checks=-bugprone-suspicious-include)
  if grep -nE '^\s*#\s*include\s*[<"][^>"]*\.(c|cc|cpp|cxx)[>"]' "${sources[@]}" >&2; then
    echo "check_tidy: a source includes a source (above; bugprone-suspicious-include)" >&2
    exit 1
  fi
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "${FX_JOBS:-$(nproc)}" -n 1 "$tidy" -p "$commands" "${extra[@]}" --quiet >"$out" 2>/dev/null
if grep -q "error:\|warning:" "$out"; then
  grep -A3 "error:\|warning:" "$out" >&2
  echo "check_tidy: $(grep -c "error:\|warning:" "$out") finding(s) in ${#files[@]} files" >&2
  exit 1
fi
if [ $# -gt 0 ]; then
  echo "check_tidy: ${#files[@]} files clean"
else
  echo "check_tidy: ${#sources[@]} sources in ${#files[@]} unity batches and sources compiled alone: clean"
fi
