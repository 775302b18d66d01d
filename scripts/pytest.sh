#!/usr/bin/env bash
# pytest.sh [pytest args]: the project's Python unit tests (tests/supervisor:
# the supervisor's policy) with the pytest setup.sh pins in .venv. No root,
# no MPI; the test supervisor_policy runs it.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
source scripts/env.sh
[ -x "$FX_VENV/bin/pytest" ] || { echo "pytest.sh: $FX_VENV/bin/pytest not found; run ./fx setup" >&2; exit 1; }
exec "$FX_VENV/bin/python3" -m pytest -q -p no:cacheprovider "${@:-tests/supervisor}"
