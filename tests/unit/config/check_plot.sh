#!/usr/bin/env bash
# check_plot.sh PLOT_SH REPORT OUT WIDTH HEIGHT: the plot command makes a
# non-empty PNG of exactly WIDTHxHEIGHT pixels.
set -euo pipefail
plot=$1 report=$2 out=$3 want_w=$4 want_h=$5
rm -f "$out"
FX_PLOT_SIZE="${want_w}x${want_h}" "$plot" "$report" "$out"
[ -s "$out" ] || { echo "check_plot: $out is missing or empty" >&2; exit 1; }
sig=$(od -An -tx1 -N8 "$out" | tr -d ' \n')
[ "$sig" = "89504e470d0a1a0a" ] || { echo "check_plot: $out is not a PNG (signature $sig)" >&2; exit 1; }
# IHDR: width and height, big-endian, at bytes 16..23.
read -r w0 w1 w2 w3 h0 h1 h2 h3 < <(od -An -tu1 -j16 -N8 "$out")
w=$(( (w0 << 24) | (w1 << 16) | (w2 << 8) | w3 ))
h=$(( (h0 << 24) | (h1 << 16) | (h2 << 8) | h3 ))
[ "$w" -eq "$want_w" ] && [ "$h" -eq "$want_h" ] ||
  { echo "check_plot: $out is ${w}x${h}, expected ${want_w}x${want_h}" >&2; exit 1; }
size=$(stat -c %s "$out")
[ "$size" -gt 20000 ] || { echo "check_plot: $out has only $size bytes; is the plot empty?" >&2; exit 1; }
echo "check_plot: $out ${w}x${h}, $size bytes"
