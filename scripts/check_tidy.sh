#!/usr/bin/env bash
# check_tidy.sh [BUILD_DIR] [FILE...]: clang-tidy (.clang-tidy's curated
# checks, every warning an error) over the library sources, in parallel,
# with BUILD_DIR's compile_commands.json (default build/). The test
# tidy_check runs it beside format_check (label style).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
tidy=$(command -v clang-tidy-14 || command -v clang-tidy) ||
  { echo "check_tidy: clang-tidy (14) not found; run ./fx setup" >&2; exit 1; }
build=${1:-${FX_BUILD_DIR:-$root/build}}
shift || true
[ -f "$build/compile_commands.json" ] ||
  { echo "check_tidy: $build/compile_commands.json not found (configure first: ./fx build)" >&2; exit 1; }
if [ $# -gt 0 ]; then
  files=("$@")
else
  mapfile -t files < <(git ls-files 'core/src/*.cpp' 'recovery/src/*.cpp' 'spares/src/*.cpp' \
    'data-store/src/*.cpp' 'framework/src/*.cpp')
fi
out=$(mktemp)
trap 'rm -f "$out"' EXIT
printf '%s\n' "${files[@]}" |
  xargs -P "${FX_JOBS:-$(nproc)}" -n 1 "$tidy" -p "$build" --quiet >"$out" 2>/dev/null
if grep -q "error:\|warning:" "$out"; then
  grep -A3 "error:\|warning:" "$out" >&2
  echo "check_tidy: $(grep -c "error:\|warning:" "$out") finding(s) in ${#files[@]} files" >&2
  exit 1
fi
echo "check_tidy: ${#files[@]} files clean"
