#!/usr/bin/env bash
# run.sh CMAKE BUILD_DIR|--prefix=PREFIX WORK_DIR [cmake args for the consumer...]
# Install the fx build tree to WORK_DIR/prefix (or take a prefix fx is
# already installed in: scripts/spack_check.sh), then configure, build and
# run tests/install/consumer against it with find_package(fx CONFIG).
set -euo pipefail
cmake_bin=$1; build=$2; work=$3; shift 3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
case "$build" in
  --prefix=*) prefix=${build#--prefix=} prefix_given=1 ;;
  *) prefix=$work/prefix
     "$cmake_bin" --install "$build" --prefix "$prefix" >"$work/install.log" \
       || { cat "$work/install.log"; exit 1; } ;;
esac
# Only the public API is installed: no header of a module's private/
# directory, nothing under a detail/ directory, none of the internals an
# application never names; every fx header an installed one includes is
# installed too (the consumer below sees only the prefix).
src=$(cd "$here/../.." && pwd)
inc=$prefix/include
private=$(cd "$src" && find core recovery spares data-store framework -path '*/private/*' -name '*.hpp' | sed 's|^.*/private/||')
[ -n "$private" ] || { echo "install: no private headers found under $src (check the test)" >&2; exit 1; }
leaked=$( (cd "$inc" && find . -path '*/detail/*' -name '*.hpp'
           for h in $private fx/recovery/repair.hpp fx/recovery/shutdown.hpp fx/recovery/ulfm.hpp \
                    fx/spares/spare_pool.hpp fx/detail/status.hpp fx/inject.hpp; do
             [ ! -e "$h" ] || echo "$h"
           done) | sort -u)
[ -z "$leaked" ] || { echo "install: internal headers installed:" "$leaked" >&2; exit 1; }
missing=$(cd "$inc" && grep -rhoE '#include <fx/[^>]+>' . | sed 's/#include <\(.*\)>/\1/' | sort -u |
          while read -r h; do [ -e "$h" ] || echo "$h"; done)
[ -z "$missing" ] || { echo "install: installed headers include headers that are not installed:" "$missing" >&2; exit 1; }
# yaml-cpp is a private dependency: no installed header may include it.
yaml=$(cd "$inc" && grep -rlE '#[[:space:]]*include[[:space:]]*[<"]yaml-cpp/' . || true)
[ -z "$yaml" ] || { echo "install: installed headers include yaml-cpp:" "$yaml" >&2; exit 1; }
# Relocatable: the exported targets name dependencies by target, never by
# an absolute path of this machine.
abs=$(grep -hE 'INTERFACE_(LINK_LIBRARIES|INCLUDE_DIRECTORIES)' "$prefix"/lib*/cmake/fx/fxTargets.cmake |
      grep -oE '[";]/[^";]*' || true)
[ -z "$abs" ] || { echo "install: exported targets name absolute paths:" "$abs" >&2; exit 1; }
echo "install: $(cd "$inc" && find . -name '*.hpp' | wc -l) public headers installed, no internal one, none includes yaml-cpp"

# README's 30-line application, as written there, is built beside it.
awk '/^```cpp$/ {on = 1; next} /^```$/ && on {exit} on' "$src/README.md" >"$work/readme_app.cpp"
grep -q 'fx::run<' "$work/readme_app.cpp" ||
  { echo "install: no application found in README.md's first C++ block" >&2; exit 1; }

# Only the prefix: the fx build tree must not leak into the consumer.
"$cmake_bin" -S "$here/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_BUILD_TYPE=Release -DFX_README_APP="$work/readme_app.cpp" "$@"
"$cmake_bin" --build "$work/build"
# The calls deprecated for one release still build, each with its warning.
if "$cmake_bin" --build "$work/build" --target deprecated_api >"$work/deprecated.log" 2>&1; then
  echo "install: deprecated_api.cpp built under -Werror=deprecated-declarations: nothing is deprecated" >&2; exit 1
fi
errors=$(grep -c 'error:' "$work/deprecated.log" || true)
deprecated=$(grep -c "error: .*deprecated" "$work/deprecated.log" || true)
[ "$errors" -eq 2 ] && [ "$deprecated" -eq 2 ] ||
  { cat "$work/deprecated.log"; echo "install: expected the 2 deprecation errors of clear() and flush(), got $errors error(s)" >&2; exit 1; }
echo "install: DataStore::clear() and flush() are deprecated (a warning each), the runtime's other steps out of reach"

# Run it through the installed launcher only (no repository script): once
# failure-free, once with logical rank 1 killed at step 12 (a spare takes
# over from the in-memory checkpoint). Verdicts 0 and 3, the same answer.
# The app's own key (app.steps, read through fx::ConfigSection) comes from
# the environment.
app=$work/build/fx_consumer
run=$prefix/bin/fx-run
export FX_CFG_CHECKPOINT__MEMORY__EVERY=5 FX_CFG_APP__STEPS=30
FX_INJECT='' "$run" -n 3 -s 1 -t 60 "$app" > "$work/clean.out" 2>&1 || { cat "$work/clean.out"; exit 1; }
rc=0
FX_INJECT=1@12 "$run" -n 3 -s 1 -t 60 "$app" > "$work/kill.out" 2>&1 || rc=$?
[ "$rc" -eq 3 ] || { cat "$work/kill.out"; echo "install: killed run exited $rc, expected 3" >&2; exit 1; }
grep -q ' 30 steps,' "$work/clean.out" ||
  { cat "$work/clean.out"; echo "install: the consumer did not read app.steps=30 from FX_CFG_APP__STEPS" >&2; exit 1; }
want=$(grep -o 'sum [0-9]*' "$work/clean.out")
got=$(grep -o 'sum [0-9]*' "$work/kill.out")
[ -n "$want" ] && [ "$want" = "$got" ] ||
  { echo "install: answer after the kill '$got' differs from the failure-free '$want'" >&2; exit 1; }
echo "install: fx-run ran the consumer: failure-free exit 0, killed rank survived with exit 3, $got both times"

# The installed launcher's host checks and supervisor (python files beside
# launch.sh): a hostfile of localhost, the same kill under --supervise.
echo 'localhost slots=4' > "$work/hostfile"
rc=0
FX_INJECT=1@12 "$run" -n 3 -s 1 -t 60 --hostfile "$work/hostfile" --supervise "$app" > "$work/supervised.out" 2>&1 ||
  rc=$?
[ "$rc" -eq 3 ] && [ "$(grep -o 'sum [0-9]*' "$work/supervised.out")" = "$want" ] ||
  { cat "$work/supervised.out"; echo "install: fx-run --hostfile --supervise exited $rc, expected 3 and $want" >&2; exit 1; }
echo "install: fx-run --hostfile --supervise ran it on localhost: killed rank survived with exit 3, $want"

# A rank's _exit(7) inside the job runs no exit handler and Open MPI's ULFM
# does not report it: fx hears it through PMIx and ends the job (exit 1),
# where the others waited until the time limit (124). Expected of a build
# that found PMIx's headers, and of a prefix (Spack's +pmix, the default).
pmix=yes
[ -n "${prefix_given:-}" ] || ! grep -qE '^FX_PMIX_INCLUDE_DIR:[A-Z]*=(.*-NOTFOUND)?$|^FX_ENABLE_PMIX:BOOL=OFF' \
  "$build/CMakeCache.txt" || pmix=no
if [ "$pmix" = yes ]; then
  rc=0
  FX_INJECT='' FX_CFG_APP__EXIT_AT=12 "$run" -n 3 -s 1 -t 60 "$app" > "$work/exit.out" 2>&1 || rc=$?
  [ "$rc" -eq 1 ] && grep -q 'world rank 1 exited with status 7' "$work/exit.out" ||
    { cat "$work/exit.out"; echo "install: a rank's _exit(7) ended with $rc, expected 1 naming it (PMIx's watch)" >&2; exit 1; }
  echo "install: a rank's _exit(7) ended the job (exit 1, the rank and status named)"
else
  echo "install: skipped a rank's _exit(7): this build has no PMIx headers (CMake's 'fx: ... PMIx' line)"
fi

# The HDF5 level through the installed plugin: the installed env.sh points
# FX_HDF5_PLUGIN at the prefix's copy, and a run with HDF5 checkpoints
# writes its files.
# shellcheck disable=SC1091  # made by the install above
plugin=$(unset FX_HDF5_PLUGIN; source "$prefix/libexec/fx/env.sh" && echo "$FX_HDF5_PLUGIN")
[ "$plugin" = "$prefix/lib/fx/libfx_hdf5.so" ] && [ -f "$plugin" ] ||
  { echo "install: the installed env.sh names the HDF5 plugin '$plugin', not an installed file" >&2; exit 1; }
FX_INJECT='' FX_CFG_CHECKPOINT__HDF5__EVERY=2 FX_CFG_CHECKPOINT__HDF5__DIRECTORY="$work/h5" \
  "$run" -n 3 -s 1 -t 60 "$app" > "$work/hdf5.out" 2>&1 || { cat "$work/hdf5.out"; exit 1; }
files=$(find "$work/h5" -name 'rank-*.h5' | wc -l)
[ "$files" -gt 0 ] || { cat "$work/hdf5.out"; echo "install: no HDF5 file written through $plugin" >&2; exit 1; }
echo "install: the HDF5 level ran through the installed plugin ($files rank files kept)"

# README's application runs and survives a kill as README says (exit 3).
rc=0
FX_CFG_APP__N=8 FX_CFG_CHECKPOINT__MEMORY__EVERY=10 FX_INJECT=2@500 \
  "$run" -n 4 -s 2 -t 60 "$work/build/readme_app" > "$work/readme.out" 2>&1 || rc=$?
[ "$rc" -eq 3 ] || { cat "$work/readme.out"; echo "install: README's application exited $rc, expected 3" >&2; exit 1; }
echo "install: README's application built and survived a kill (exit 3)"
