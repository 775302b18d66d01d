#!/usr/bin/env bash
# ./fx plot REPORT.yaml [OUT.png]: render a run report's timeline as a PNG
# (default: the report's name with .png; size FX_PLOT_SIZE, 1280x720).
# Uses gnuplot and PyYAML from Debian (scripts/setup.sh installs both).
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
usage="usage: fx plot REPORT.yaml [OUT.png] (size: FX_PLOT_SIZE=WxH, default 1280x720)"
case "${1:-}" in
  -h|--help) echo "$usage"; exit 0 ;;
  -*) echo "fx plot: unknown option '$1'" >&2; echo "$usage" >&2; exit 2 ;;
esac
[ $# -ge 1 ] && [ $# -le 2 ] || { echo "$usage" >&2; exit 2; }
report=$1
out=${2:-${report%.yaml}.png}
# Where the picture's path came from, for a refusal (plot_report.py).
if [ $# -ge 2 ]; then export FX_PLOT_OUT_FROM="OUT.png"; else export FX_PLOT_OUT_FROM="OUT.png (REPORT's name, .png)"; fi
[ -r "$report" ] || { echo "fx plot: cannot read the report '$report'" >&2; exit 1; }
command -v gnuplot >/dev/null || { echo "fx plot: gnuplot not found; run ./fx setup" >&2; exit 1; }
# Debian's python3 has PyYAML; the project venv's python may not.
py=/usr/bin/python3
[ -x "$py" ] || py=python3
"$py" "$root/scripts/plot_report.py" "$report" "$out" "${FX_PLOT_SIZE:-1280x720}"
echo "fx plot: wrote $out"
