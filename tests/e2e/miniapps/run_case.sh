#!/usr/bin/env bash
# One mini-app end-to-end case with real failures:
#
#   run_case.sh WORKDIR EXPECT NP SPARES LIMIT INJECT RTOL -- REF... -- APP...
#
# 1. runs the reference REF (the plain baseline, failure-free) on NP ranks;
# 2. runs APP on NP active + SPARES spare ranks with FX_INJECT=INJECT
#    ("-": none; '|' separates failures) under the fx launcher, time
#    limit LIMIT s;
# 3. checks the launcher's verdict is EXPECT (0 ok, 3 survived, 4 aborted);
# 4. compares every `result:` line of the two runs: bitwise, except the
#    keys in RTOL ("key=tol,key=tol" or "-"), compared to that relative
#    tolerance. With EXPECT 4 there is no answer: the run must instead end
#    with fx's named error about exhausted spares.
# The reference runs on E2E_REF_NP ranks when set (decomposition checks).
# Extra checks through the environment: E2E_EXPECT_LOG (an extended regex
# the app's output must match) and E2E_EXPECT_REPORT (one the YAML run
# report, written to WORKDIR/report.yaml, must match), E2E_FAILURES (the
# number of process failures the report must list with EXPECT 3, when it is
# not one per injected spec: a TryBlock rollback survives without a death),
# E2E_MAX_RSS_RATIO (the app's `timing: peak_rss_max_kb` at most this many
# times the reference's), E2E_SAME_LINES (an extended regex: the app's stdout
# lines matching it must be the reference's, in order: output such as md's
# thermo rows, which a recovery must neither repeat nor lose),
# E2E_CHECKPOINT_DIR (the app's HDF5 directory instead of WORKDIR/checkpoints:
# a cold restart from what an earlier test left there), E2E_REF_OUT (the
# output of an earlier run of the same reference: REF is not run again, as
# for a series of kill runs against one failure-free answer).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../../.." && pwd)
launcher=$root/scripts/launch.sh

work=$1 expect=$2 np=$3 spares=$4 limit=$5 inject=$6 rtol=$7
shift 7
[ "${1:-}" = "--" ] || { echo "run_case: expected -- before the reference command" >&2; exit 2; }
shift
ref=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do ref+=("$1"); shift; done
[ "${1:-}" = "--" ] || { echo "run_case: expected -- before the app command" >&2; exit 2; }
shift
app=("$@")

rm -rf "$work"
mkdir -p "$work"
fail() { echo "run_case: FAIL: $*" >&2; exit 1; }

# The reference: failure-free, no fx policy involved.
if [ -n "${E2E_REF_OUT:-}" ]; then
  cp "$E2E_REF_OUT" "$work/ref.out" || fail "E2E_REF_OUT: cannot read '$E2E_REF_OUT'"
else
  (unset FX_INJECT; "$launcher" -n "${E2E_REF_NP:-$np}" -s 0 -t "$limit" -- "${ref[@]}") >"$work/ref.out" 2>"$work/ref.err"
  rc=$?
  [ "$rc" -eq 0 ] || { cat "$work/ref.err" >&2; fail "reference exited with $rc"; }
fi
grep '^result: ' "$work/ref.out" >"$work/ref.results" || fail "reference printed no result lines"

# The run under test.
export FX_CHECKPOINT_DIR="${E2E_CHECKPOINT_DIR:-$work/checkpoints}" FX_REPORT="$work/report.yaml"
if [ "$inject" = "-" ]; then unset FX_INJECT; else export FX_INJECT="$inject"; fi
start=$(date +%s.%N)
"$launcher" -n "$np" -s "$spares" -t "$limit" -- "${app[@]}" >"$work/app.out" 2>"$work/app.err"
rc=$?
end=$(date +%s.%N)
echo "run_case: app exited with $rc after $(awk "BEGIN{printf \"%.2f\", $end - $start}") s (FX_INJECT=${FX_INJECT:-none})"
sed 's/^/  | /' "$work/app.err" | grep -E 'WARN|ERROR|restored|resumed|recovered|inject' | head -40
[ "$rc" -eq "$expect" ] || { cat "$work/app.out" "$work/app.err" >&2; fail "app exited with $rc, expected $expect"; }
if [ -n "${E2E_EXPECT_LOG:-}" ]; then
  cat "$work/app.out" "$work/app.err" | grep -Eq "$E2E_EXPECT_LOG" || fail "app output does not match /$E2E_EXPECT_LOG/"
fi
if [ -n "${E2E_EXPECT_REPORT:-}" ]; then
  [ -f "$work/report.yaml" ] || fail "no run report at $work/report.yaml"
  grep -Eq "$E2E_EXPECT_REPORT" "$work/report.yaml" || fail "the run report does not match /$E2E_EXPECT_REPORT/"
fi

# Every injected failure happened: the report lists one per '|'-joined spec.
if [ "$expect" -eq 3 ]; then
  want=${E2E_FAILURES:-$(($(tr -cd '|' <<<"$inject" | wc -c) + 1))}
  got=$(grep -c '^  - world_rank:' "$work/report.yaml" 2>/dev/null)
  [ "${got:-0}" -eq "$want" ] || fail "the run report lists ${got:-0} failure(s), $want were injected"
fi

if [ "$expect" -eq 4 ]; then
  grep -Eq 'on_exhausted' "$work/app.err" || fail "aborted without naming recovery.on_exhausted"
  grep -q '^result: ' "$work/app.out" && fail "an aborted run printed results"
  echo "run_case: aborted cleanly, as expected"
  exit 0
fi

if [ -n "${E2E_SAME_LINES:-}" ]; then
  diff <(grep -E "$E2E_SAME_LINES" "$work/ref.out") <(grep -E "$E2E_SAME_LINES" "$work/app.out") >&2 ||
    fail "the app's lines matching /$E2E_SAME_LINES/ are not the reference's (above: < reference, > app)"
fi
grep '^result: ' "$work/app.out" >"$work/app.results" || fail "app printed no result lines"
python3 - "$work/ref.results" "$work/app.results" "$rtol" <<'PY' || fail "answers differ"
import sys
def load(path):
    out = {}
    for line in open(path):
        key, _, value = line[len("result: "):].strip().partition(" = ")
        out[key] = value
    return out
ref, app = load(sys.argv[1]), load(sys.argv[2])
tol = {}
if sys.argv[3] != "-":
    for item in sys.argv[3].split(","):
        k, _, v = item.partition("=")
        tol[k] = float(v)
ok = True
for key, want in ref.items():
    got = app.get(key)
    if got is None:
        print(f"  {key}: missing (reference {want})"); ok = False; continue
    if key in tol:
        a, b = float(want), float(got)
        rel = abs(a - b) / max(abs(a), 1e-300)
        good = rel <= tol[key]
        print(f"  {key}: {got} vs {want}  rel {rel:.2e} <= {tol[key]:.0e}: {'ok' if good else 'NO'}")
    else:
        good = got == want
        print(f"  {key}: {got} {'==' if good else '!='} {want}")
    ok &= good
sys.exit(0 if ok else 1)
PY
echo "run_case: the answer matches the reference"
if [ -n "${E2E_MAX_RSS_RATIO:-}" ] && [ -n "${FX_SANITIZED:-}" ]; then
  # ASan's shadow memory and quarantine weigh on fx and the baseline unevenly.
  echo "run_case: peak RSS not compared (built with the sanitizers: $FX_SANITIZED)"
elif [ -n "${E2E_MAX_RSS_RATIO:-}" ]; then
  rss() { sed -n 's/^timing: peak_rss_max_kb = //p' "$1"; }
  ref_kb=$(rss "$work/ref.out") app_kb=$(rss "$work/app.out")
  [ -n "$ref_kb" ] && [ -n "$app_kb" ] || fail "no timing: peak_rss_max_kb line to compare"
  awk -v a="$app_kb" -v r="$ref_kb" -v m="$E2E_MAX_RSS_RATIO" 'BEGIN {
    printf "run_case: peak RSS per rank %d kB vs the reference'"'"'s %d kB: %.3fx (at most %s)\n", a, r, a / r, m
    exit !(a <= m * r) }' || fail "peak RSS above ${E2E_MAX_RSS_RATIO}x the reference's"
fi
