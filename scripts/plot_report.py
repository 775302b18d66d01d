#!/usr/bin/env python3
"""Render an fx run report (YAML) as a timeline PNG with gnuplot.

usage: plot_report.py REPORT.yaml OUT.png [WIDTHxHEIGHT]

Iteration progress over time (a roll-back after a failure shows as a drop),
checkpoints (memory and HDF5), each failure (kill), its detection, and each
recovery with its phases (revoke, shrink, agree, rebuild, restore) stacked in
a strip along the top. Needs PyYAML (Debian python3-yaml) and gnuplot.
"""
import os
import subprocess
import sys

import fx_files
import yaml

PHASES = [("revoke", "#9467bd"), ("shrink", "#8c564b"), ("agree", "#e377c2"),
          ("rebuild", "#17becf"), ("restore", "#bcbd22")]


def num(x, default=0.0):
    try:
        return float(x)
    except (TypeError, ValueError):
        return default


def quote(text):
    return '"' + str(text).replace("\\", "\\\\").replace('"', '\\"') + '"'


def build_script(rep, out, width, height):
    progress = [(num(t), num(i)) for t, i in (rep.get("progress") or [])]
    failures = rep.get("failures") or []
    recoveries = rep.get("recoveries") or []
    checkpoints = rep.get("checkpoints") or []
    platform = rep.get("platform") or {}
    exit_ = rep.get("exit") or {}

    t_end = max([t for t, _ in progress] + [num(f.get("time")) for f in failures] +
                [num(r.get("start")) + num((r.get("seconds") or {}).get("total")) for r in recoveries] + [1e-3])
    it_max = max([i for _, i in progress] + [num(c.get("iteration")) for c in checkpoints] + [1])
    y_top = it_max * 1.15 + 1
    strip = (it_max * 1.04 + 0.5, y_top)  # recovery phases live in this band

    lines = []
    w = lines.append
    w(f"set terminal pngcairo size {width},{height} enhanced font 'sans,10'")
    w(f"set output {quote(out)}")
    title = (f"fx run: {rep.get('app') or 'app'} on {platform.get('active_ranks', '?')}+"
             f"{platform.get('spares', '?')} ranks - {len(failures)} failure(s), {len(recoveries)} "
             f"recovery(ies), exit {exit_.get('code', '?')} ({exit_.get('status', '?')})")
    w(f"set title {quote(title)}")
    w("set xlabel 'time since start (s)'")
    w("set ylabel 'iteration'")
    w(f"set xrange [0:{t_end * 1.03:.6f}]")
    w(f"set yrange [0:{y_top:.3f}]")
    w("set grid lc rgb '#dddddd'")
    w("set key outside right top vertical Left reverse noenhanced")
    w("set style fill solid 0.85 noborder")

    # Failure-to-resume bands, then the phase strip.
    obj = 1
    for n, r in enumerate(recoveries, 1):
        start = num(r.get("start"))
        secs = r.get("seconds") or {}
        detect = num(secs.get("detect"), -1)
        kill = start - detect if detect >= 0 else start
        end = start + num(secs.get("total"))
        w(f"set object {obj} rect from {kill:.6f},0 to {end:.6f},{strip[0]:.3f} behind "
          "fc rgb '#f4cccc' fs solid 0.6 noborder")
        obj += 1
        # Real recoveries take milliseconds: say how long next to the strip.
        text = f"recovery #{n}: {num(secs.get('total')) * 1e3:.1f} ms"
        w(f"set label {1000 + n} {quote(text)} at {end:.6f},{(strip[0] + strip[1]) / 2:.3f} left offset 0.6,0 "
          "front font ',9' noenhanced")
        x = start
        for name, color in PHASES:
            d = num(secs.get(name))
            if d <= 0:
                continue
            w(f"set object {obj} rect from {x:.6f},{strip[0]:.3f} to {x + d:.6f},{strip[1]:.3f} front "
              f"fc rgb '{color}' fs solid 1 noborder")
            obj += 1
            x += d
    # Kills and detections as vertical lines with a label.
    arrow = 1
    for f in failures:
        t = num(f.get("time"))
        w(f"set arrow {arrow} from {t:.6f},0 to {t:.6f},{strip[0]:.3f} nohead lc rgb '#d62728' lw 1.5")
        arrow += 1
        who = f"rank {f.get('logical_rank')}" if num(f.get("logical_rank"), -1) >= 0 else "spare"
        w(f"set label {arrow} {quote('kill ' + who)} at {t:.6f},{strip[0] * 0.97:.3f} right offset -0.5,0 "
          "tc rgb '#d62728' noenhanced")
        lat = num(f.get("detection_latency"), -1)
        if lat >= 0:
            w(f"set arrow {arrow + 1} from {t + lat:.6f},0 to {t + lat:.6f},{strip[0]:.3f} nohead "
              "lc rgb '#ff7f0e' lw 1.2 dt 2")
        arrow += 2

    # Data: progress split where the iteration drops (a roll-back).
    w("$progress << EOD")
    prev = None
    for t, i in progress:
        if prev is not None and i < prev:
            w("")
        w(f"{t:.6f} {i:.0f}")
        prev = i
    w("EOD")
    w("$rollback << EOD")
    prev = None
    for t, i in progress:
        if prev is not None and i < prev[1]:
            w(f"{prev[0]:.6f} {prev[1]:.0f}")
            w(f"{t:.6f} {i:.0f}")
            w("")
        prev = (t, i)
    w("EOD")
    for level in ("memory", "node", "hdf5"):
        w(f"${level} << EOD")
        for c in checkpoints:
            if c.get("level") == level:
                w(f"{num(c.get('time')):.6f} {num(c.get('iteration')):.0f}")
        w("EOD")
    w("$failures << EOD")
    for f in failures:
        w(f"{num(f.get('time')):.6f} {num(f.get('iteration')):.0f}")
    w("EOD")

    plots = [
        "$progress using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'iteration'",
        "$rollback using 1:2 with lines lw 1 dt 3 lc rgb '#7f7f7f' title 'roll-back'",
        "$memory using 1:2 with points pt 9 ps 1.0 lc rgb '#2ca02c' title 'checkpoint (memory)'",
        "$node using 1:2 with points pt 7 ps 0.9 lc rgb '#17becf' title 'checkpoint (node-local)'",
        "$hdf5 using 1:2 with points pt 5 ps 1.1 lc rgb '#006400' title 'checkpoint (HDF5)'",
        "$failures using 1:2 with points pt 2 ps 2 lw 2 lc rgb '#d62728' title 'failure (kill)'",
        "NaN with lines lw 1.2 dt 2 lc rgb '#ff7f0e' title 'detection'",
        "NaN with boxes fc rgb '#f4cccc' title 'kill to resume'",
    ]
    plots += [f"NaN with boxes fc rgb '{c}' title 'recovery: {n}'" for n, c in PHASES]
    w("plot " + ", \\\n     ".join(plots))
    return "\n".join(lines) + "\n"


def main(argv):
    if len(argv) < 3 or len(argv) > 4:
        sys.stderr.write(__doc__.split("\n\n")[1] + "\n")
        return 2
    report, out = argv[1], argv[2]
    size = argv[3] if len(argv) == 4 else "1280x720"
    try:
        width, height = (int(v) for v in size.lower().split("x"))
    except ValueError:
        sys.stderr.write(f"fx plot: size expects WIDTHxHEIGHT, got '{size}'\n")
        return 2
    # Before any work: no device node, FIFO, socket or link is written over,
    # and the picture's directory takes a file.
    why = fx_files.unwritable_target(out)
    if why:
        origin = os.environ.get("FX_PLOT_OUT_FROM", "OUT.png")
        sys.stderr.write(f"fx plot: {origin}: expected a picture file path, got '{out}' ({why})\n")
        return 2
    try:
        with open(report) as fh:
            rep = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError) as e:
        sys.stderr.write(f"fx plot: cannot read the report '{report}': {e}\n")
        return 1
    if not isinstance(rep, dict) or "fx_report" not in rep:
        sys.stderr.write(f"fx plot: '{report}' is not an fx run report (no fx_report key)\n")
        return 1
    # gnuplot draws into a temporary beside the picture, renamed over it.
    try:
        fd, tmp = fx_files.temp_beside(out)
    except OSError as e:
        sys.stderr.write(f"fx plot: cannot write the picture to '{out}': {e}\n")
        return 1
    os.close(fd)
    done = subprocess.run(["gnuplot"], input=build_script(rep, tmp, width, height), text=True,
                          capture_output=True, check=False)
    if done.returncode != 0:
        os.unlink(tmp)
        sys.stderr.write(f"fx plot: gnuplot failed:\n{done.stderr}")
        return 1
    try:
        fx_files.replace_with(tmp, out)
    except (OSError, fx_files.Refused) as e:
        sys.stderr.write(f"fx plot: cannot write the picture to '{out}': {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
