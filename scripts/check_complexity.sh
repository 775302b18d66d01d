#!/usr/bin/env bash
# check_complexity.sh: the complexity gate over the five library modules'
# sources. lizard lists every function with a cyclomatic complexity over 15
# or more than 60 lines of code; any such function fails the check, with
# lizard's warnings. Why: a function that long or that branchy is hard to
# review and to test path by path; split it into named steps instead
# (issue 41). Run by the test complexity_check beside format_check (label
# style); lizard is pinned in .venv by setup.sh.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"
# shellcheck source=env.sh
source scripts/env.sh
lizard=$FX_VENV/bin/lizard
[ -x "$lizard" ] || { echo "check_complexity: $lizard not found; run ./fx setup" >&2; exit 1; }
if ! out=$("$lizard" -w -C 15 -T nloc=60 core/src data-store/src framework/src recovery/src spares/src) ||
  [ -n "$out" ]; then
  echo "$out" >&2
  echo "check_complexity: $(grep -c "warning:" <<<"$out") function(s) over CCN 15 or 60 NLOC: split them into named steps" >&2
  exit 1
fi
echo "check_complexity: no library function over CCN 15 or 60 NLOC"
