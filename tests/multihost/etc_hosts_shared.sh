#!/usr/bin/env bash
# Test hosts of one set stay known while another set is made and removed:
# each set adds its names to /etc/hosts and takes them out again, and a
# rewrite in place once left the file empty for a moment, so a supervisor
# found its own live host unknown and counted it lost (CI,
# multihost_host_kill_shrink_hdf5). Here set A's host is resolved without
# pause while set B goes up and down ROUNDS times; any failed lookup fails.
#   tests/multihost/etc_hosts_shared.sh [ROUNDS]      (exit 77: no test hosts here)
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
th=$root/scripts/testhosts.sh
rounds=${1:-4}
a=(env FX_TESTHOSTS_PREFIX=fxsa FX_TESTHOSTS_NET=10.233.1)
b=(env FX_TESTHOSTS_PREFIX=fxsb FX_TESTHOSTS_NET=10.233.2)
"${a[@]}" "$th" status >/dev/null 2>&1
[ $? -eq 77 ] && { echo "etc_hosts_shared: test hosts unavailable here; skipped"; exit 77; }
resolver="" out=""
cleanup() {
  [ -n "$resolver" ] && kill "$resolver" 2>/dev/null
  [ -n "$out" ] && rm -f "$out" "$out.stop"
  "${b[@]}" "$th" down >/dev/null 2>&1
  "${a[@]}" "$th" down >/dev/null 2>&1
}
trap cleanup EXIT
"${a[@]}" "$th" up 1 >/dev/null || { echo "etc_hosts_shared: set A did not come up" >&2; exit 1; }
out=$(mktemp)
# Resolves until the stop file appears, then writes its counts once.
python3 - "$out" <<'PY' &
import os, socket, sys, time
ok = bad = 0
end = time.monotonic() + 600
while time.monotonic() < end and not os.path.exists(sys.argv[1] + ".stop"):
    try:
        socket.gethostbyname("fxsa1")
        ok += 1
    except OSError:
        bad += 1
with open(sys.argv[1], "w") as f:
    f.write(f"{ok} {bad}\n")
PY
resolver=$!
for i in $(seq "$rounds"); do
  "${b[@]}" "$th" up 1 >/dev/null && "${b[@]}" "$th" down >/dev/null ||
    { echo "etc_hosts_shared: set B round $i failed" >&2; exit 1; }
done
touch "$out.stop"
wait "$resolver"
resolver=""
read -r ok bad <"$out"
echo "etc_hosts_shared: $rounds rounds of set B up and down; fxsa1 resolved $ok times, failed $bad times"
[ "${ok:-0}" -gt 0 ] && [ "${bad:-1}" -eq 0 ]
