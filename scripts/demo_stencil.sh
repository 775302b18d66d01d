#!/usr/bin/env bash
# The fx demo: the stencil mini-app on 4 active + 2 spare ranks loses a
# process to a real SIGKILL mid-run, fx detects it, a spare takes the dead
# rank's place, the field comes back from the buddy checkpoint and the
# sweep resumes; the answer is then compared with the failure-free one.
#
#   scripts/demo_stencil.sh            (./fx demo)
#   FX_DEMO_KILL=0 scripts/demo_stencil.sh    kill logical rank 0 instead
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
source "$root/scripts/env.sh"
bin=$FX_BUILD_DIR/miniapps/stencil
for exe in stencil stencil_baseline; do
  [ -x "$bin/$exe" ] || { echo "demo: $bin/$exe not built (run ./fx build)" >&2; exit 1; }
done

victim=${FX_DEMO_KILL:-2}
kill_at=${FX_DEMO_ITERATION:-230}
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-demo.XXXXXX")
trap 'rm -rf "$work"' EXIT
report=$FX_BUILD_DIR/demo_stencil_report.yaml
cat >"$work/demo.yaml" <<EOF
checkpoint:
  memory:
    every: 50          # buddy copy in a neighbour's memory every 50 sweeps
app:
  nx: 64
  ny: 64
  nz: 64
  iterations: 400
  residual_every: 10
  progress_every: 50
EOF

bold() { printf '\n\033[1m%s\033[0m\n' "$*"; }

bold "1/3  Failure-free reference: the plain MPI + Kokkos baseline on 4 ranks"
"$root/scripts/launch.sh" -n 4 -t 120 -- "$bin/stencil_baseline" --config "$work/demo.yaml" \
  >"$work/ref.out" 2>"$work/ref.err" || { cat "$work/ref.err"; echo "demo: the reference run failed" >&2; exit 1; }
grep '^result: ' "$work/ref.out" | tee "$work/ref.results"

bold "2/3  fx: 4 active + 2 spare ranks; logical rank $victim is SIGKILLed at iteration $kill_at"
echo "     (FX_INJECT='$victim@$kill_at': a real signal at a deterministic point, no timer)"
FX_INJECT="$victim@$kill_at" FX_REPORT="$report" \
  "$root/scripts/launch.sh" -n 4 -s 2 -t 120 -- "$bin/stencil" --fx-config "$work/demo.yaml" \
  >"$work/app.out" 2> >(tee "$work/app.err" >&2)
rc=$?
sleep 0.2  # let the stderr tee finish
cat "$work/app.out"
echo "     launcher exit code: $rc (3 = finished after surviving failures)"

bold "3/3  Comparison with the failure-free answer"
grep '^result: ' "$work/app.out" >"$work/app.results"
if [ "$rc" -eq 3 ] && diff "$work/ref.results" "$work/app.results" >/dev/null; then
  sed 's/^result: /  identical  /' "$work/app.results"
  echo
  echo "The run lost logical rank $victim, recovered in place, and finished with the bitwise"
  echo "answer of the failure-free run (iterations, L2 norm, xxHash checksum of the field)."
  png=$FX_BUILD_DIR/demo_stencil_timeline.png
  if "$root/scripts/plot.sh" "$report" "$png" >/dev/null 2>&1; then
    echo "Timeline of the run: $png (report: $report)"
  else
    echo "(could not draw the timeline: ./fx plot $report)" >&2
  fi
  exit 0
fi
diff "$work/ref.results" "$work/app.results"
echo "demo: the answers differ or the run did not survive (exit $rc)" >&2
exit 1
