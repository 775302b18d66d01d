#!/usr/bin/env bash
# run.sh CMAKE BUILD_DIR WORK_DIR [cmake args for the consumer...]
# Install the fx build tree to WORK_DIR/prefix, then configure, build and
# run tests/install/consumer against it with find_package(fx CONFIG).
set -euo pipefail
cmake_bin=$1; build=$2; work=$3; shift 3
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
rm -rf "$work"
mkdir -p "$work"
"$cmake_bin" --install "$build" --prefix "$work/prefix" >"$work/install.log" \
  || { cat "$work/install.log"; exit 1; }
# Only the prefix: the fx build tree must not leak into the consumer.
"$cmake_bin" -S "$here/consumer" -B "$work/build" -DCMAKE_PREFIX_PATH="$work/prefix" \
  -DCMAKE_BUILD_TYPE=Release "$@"
"$cmake_bin" --build "$work/build"
"$work/build/fx_consumer"
