#!/usr/bin/env bash
# scripts/env.sh derives FX_ROOT from its own checkout, and FX_VENV /
# FX_BUILD_DIR anew where an earlier env.sh (another checkout's, or another
# Kokkos') derived them, keeping what the caller set.
set -euo pipefail
env_sh=$(cd "$(dirname "$0")/../../scripts" && pwd)/env.sh
root=$(cd "$(dirname "$env_sh")/.." && pwd)
fail=0
check() {  # WHAT GOT WANT
  if [ "$2" != "$3" ]; then echo "FAIL: $1: got '$2', want '$3'"; fail=1; else echo "ok: $1"; fi
}
unset FX_ROOT FX_VENV FX_BUILD_DIR FX_KOKKOS FX_DERIVED_VENV FX_DERIVED_BUILD_DIR
# Another checkout's exports in the caller's shell.
got=$(FX_ROOT=/elsewhere FX_VENV=/elsewhere/.venv FX_DERIVED_VENV=/elsewhere/.venv \
      FX_BUILD_DIR=/elsewhere/build FX_DERIVED_BUILD_DIR=/elsewhere/build FX_KOKKOS=3 \
      bash -c "source '$env_sh'; echo \"\$FX_ROOT|\$FX_VENV|\$FX_BUILD_DIR\"")
check "another checkout's derived paths" "$got" "$root|$root/.venv|$root/build"
# This checkout's env.sh sourced for Kokkos 3, then a Kokkos 4 command.
got=$(bash -c "source '$env_sh'; FX_KOKKOS=4 bash -c \"source '$env_sh'; echo \\\$FX_BUILD_DIR\"")
check "Kokkos 4 after Kokkos 3" "$got" "$root/build-kokkos4"
# What the caller set is kept, in the nested call too.
got=$(FX_BUILD_DIR=/tmp/mine FX_VENV=/tmp/venv bash -c "source '$env_sh'; bash -c \"source '$env_sh'; echo \\\$FX_VENV \\\$FX_BUILD_DIR\"")
check "the caller's paths" "$got" "/tmp/venv /tmp/mine"
exit $fail
