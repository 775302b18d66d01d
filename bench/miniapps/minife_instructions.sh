#!/usr/bin/env bash
# Issue 29 item 6, counted rather than timed: minife's fx app against its
# plain baseline under callgrind, per CG iteration and rank, at several
# shapes. Instruction counts and simulated cache misses do not move with
# the machine's load or the core a rank lands on, so this runs anywhere
# (2 cores included) and shows whether fx adds work or memory traffic to an
# iteration; it does not replace the timed comparison (minife_overhead.sh),
# which needs a core per rank.
#
#   bench/miniapps/minife_instructions.sh [-i ITERATIONS] [-o OUT.yaml] [SHAPE...]
#
# SHAPE as in minife_overhead.sh: `default:P` or `N:P` (problem minife, N^3
# elements, P ranks). Default: default:4 32:4 64:4, 50 iterations (64:4
# takes about 4 minutes on 2 cores). Collected: fx's whole step loop
# (Runtime::steps, the runtime's work between steps included) and the
# baseline's Cg::step; set-up and the end are not counted. Simulated caches
# per rank: D1 48 KiB 12-way and LL 2 MiB 16-way (one core's L1d and L2 on
# the lent Xeon of docs/benchmarks.md). Each function's own cost is put in
# one part: `app` (miniapps::, the CG kernels and halo packing), `fx`
# (fx::, the runtime and its Comm wrappers), `mpi` (Open MPI's libraries,
# which include the time spent polling while a peer is late), `libc`
# (memcpy of the shared-memory transport, clock reads) and `other`
# (Kokkos, libstdc++). FX_BUILD_DIR picks the build.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
source "$root/scripts/env.sh"
iterations=50 out=$root/bench/results/minife_instructions.yaml
while getopts "i:o:" opt; do
  case $opt in
    i) iterations=$OPTARG ;;
    o) out=$OPTARG ;;
    *) echo "usage: $0 [-i ITERATIONS] [-o OUT.yaml] [default:P|N:P ...]" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
read -r -a shapes <<<"${*:-default:4 32:4 64:4}"
command -v valgrind >/dev/null || { echo "bench: valgrind not found (./fx setup installs it)" >&2; exit 1; }
source "$root/bench/miniapps/minife_shapes.sh"
declare -A exes=()
for variant in fx baseline; do exes[$variant]=$(minife_exe "$variant") || exit 1; done
work=$(mktemp -d "${TMPDIR:-/tmp}/fx-bench-minife-instructions.XXXXXX")
trap 'rm -rf "$work"' EXIT
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
vg=(valgrind --tool=callgrind --cache-sim=yes '--D1=49152,12,64' '--LL=2097152,16,64' --collect-atstart=no)
declare -A toggle=([fx]='*Runtime::steps*' [baseline]='*Cg*::step*')

for shape in "${shapes[@]}"; do
  args=(--progress-every 0 --max-iterations "$iterations")
  minife_shape "$shape" args
  np=${shape##*:}
  for variant in fx baseline; do
    dir=$work/$shape/$variant
    mkdir -p "$dir"
    echo "bench: $shape $variant under callgrind ..." >&2
    FX_INJECT='' "$root/scripts/launch.sh" -n "$np" -s 0 -t 1200 -- "${vg[@]}" "--toggle-collect=${toggle[$variant]}" \
      "--callgrind-out-file=$dir/callgrind.%p" "${exes[$variant]}" "${args[@]}" >"$dir/out" 2>"$dir/err" ||
      { tail -5 "$dir/err" >&2; echo "bench: $variant $shape failed" >&2; exit 1; }
    for f in "$dir"/callgrind.*; do
      callgrind_annotate --threshold=100 --show-percs=no --auto=no "$f" >"$f.txt" 2>/dev/null ||
        { echo "bench: callgrind_annotate failed on $f" >&2; exit 1; }
    done
  done
done

# The summary goes through PyYAML (bench/common/bench_results.py).
PYTHONPATH=$root/bench/common${PYTHONPATH:+:$PYTHONPATH} /usr/bin/python3 - "$work" "$out" "$load_before" "${shapes[@]}" <<'PY'
import datetime, glob, os, re, statistics, sys
import bench_results

work, out, load_before, shapes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
PARTS = ("app", "fx", "mpi", "libc", "other")
MPI_OBJECTS = re.compile(r"/\.venv/|libmpi|libopen-|libpmix|libprrte|libevent|libhwloc|libuc[pst]|mca_")
LIBC_OBJECTS = re.compile(r"/libc\.so|/libm\.so|/ld-linux|vdso")
ENTRY = re.compile(r"^[^:]*:(.*) \[(.*)\]$")  # file:function [object]
FX_FUNCTION = re.compile(r"(^|\s)fx::")

def part(function, obj):
    if MPI_OBJECTS.search(obj):
        return "mpi"
    if LIBC_OBJECTS.search(obj):
        return "libc"
    if "miniapps::" in function:
        return "app"
    if FX_FUNCTION.search(function):  # also `T fx::f<T>(...)`: templates carry their return type
        return "fx"
    return "other"

def rank_costs(path):
    """Own (exclusive) cost of each part: {part: {event: count}}."""
    events, costs = None, {p: {} for p in PARTS}
    for line in open(path):
        if line.startswith("Events shown:"):
            events = line.split(":", 1)[1].split()
            continue
        fields = line.split()
        if events is None or len(fields) <= len(events) or "PROGRAM TOTALS" in line:
            continue
        head = fields[: len(events)]
        m = ENTRY.match(" ".join(fields[len(events):]))
        if not m or not all(re.fullmatch(r"[\d,]+|\.", v) for v in head):
            continue
        values = [0 if v == "." else int(v.replace(",", "")) for v in head]
        p = costs[part(m.group(1), m.group(2))]
        for e, v in zip(events, values):
            p[e] = p.get(e, 0) + v
    return costs

def measures(c):
    return {"instructions": c.get("Ir", 0), "d1_misses": c.get("D1mr", 0) + c.get("D1mw", 0),
            "ll_misses": c.get("DLmr", 0) + c.get("DLmw", 0)}

def iterations_of(out_text):
    m = re.search(r"^result: iterations = (\d+)", out_text, re.M)
    if not m:
        sys.exit("bench: no `result: iterations` line in a run's output")
    return int(m.group(1))

def variant(shape, name):
    d = os.path.join(work, shape, name)
    its = iterations_of(open(os.path.join(d, "out")).read())
    ranks = [rank_costs(f) for f in sorted(glob.glob(os.path.join(d, "callgrind.*.txt")))]
    # Per rank and iteration, the median over ranks of each part.
    parts = {p: {k: round(statistics.median(measures(r[p])[k] for r in ranks) / its, 1)
                 for k in ("instructions", "d1_misses", "ll_misses")} for p in PARTS}
    work_parts = ("app", "fx", "other")  # what does not wait on a peer
    parts["without_mpi"] = {k: round(sum(parts[p][k] for p in work_parts), 1)
                            for k in ("instructions", "d1_misses", "ll_misses")}
    return {"iterations": its, "ranks": len(ranks), "per_rank_iteration": parts}

results = {}
for shape in shapes:
    n, np = shape.split(":")
    fx, base = variant(shape, "fx"), variant(shape, "baseline")
    a, b = fx["per_rank_iteration"]["without_mpi"], base["per_rank_iteration"]["without_mpi"]
    # None where neither side missed (a problem that fits the simulated LL).
    ratio = {k: round(a[k] / b[k], 4) if b[k] else None for k in a}
    results[shape] = {"problem": "unit 20^3 (default)" if n == "default" else f"minife {n}^3",
                      "ranks": int(np), "fx": fx, "baseline": base, "ratio_without_mpi": ratio,
                      "fx_instructions_percent": round((a["instructions"] / b["instructions"] - 1) * 100, 4)}
    print(f"{shape}: fx / baseline per rank and iteration, MPI left out: instructions {ratio['instructions']}, "
          f"D1 misses {ratio['d1_misses']}, LL misses {ratio['ll_misses']}; "
          f"fx's own code {fx['per_rank_iteration']['fx']['instructions']:.0f} instructions per iteration")
bench_results.write(out, {
    "benchmark": "minife_instructions",
    "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
    "tool": "valgrind --tool=callgrind --cache-sim=yes (D1 48 KiB 12-way, LL 2 MiB 16-way)",
    "spares": 0, "checkpoints": "off",
    "load_average_before": load_before,
    "shapes": results,
}, "bench/miniapps/minife_instructions.sh: per rank and CG iteration, medians over ranks")
PY
