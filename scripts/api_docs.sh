#!/usr/bin/env bash
# api_docs.sh [OUT_DIR]: the API reference of the installed headers, built
# with Doxygen (docs/Doxyfile) into OUT_DIR/html (default build/docs/api).
# Any Doxygen warning (an undocumented public symbol, a broken doc comment)
# fails it; the warnings are kept in OUT_DIR/warnings.txt. Run by
# `./fx docs` and the test that keeps the reference complete (label style).
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 1
command -v doxygen >/dev/null ||
  { echo "api_docs: doxygen not found; run ./fx setup" >&2; exit 1; }
out=${1:-${FX_BUILD_DIR:-$root/build}/docs/api}
mkdir -p "$out" || exit 1
out=$(cd "$out" && pwd)
warnings=$out/warnings.txt
rm -rf "$out/html"  # no pages left over from symbols since removed
headers=$(find core/include data-store/include framework/include recovery/include spares/include \
  -name '*.hpp' | wc -l)

# QUIET=YES: what Doxygen writes on stderr is warnings (and errors) only.
FX_DOCS_OUT=$out doxygen docs/Doxyfile >/dev/null 2>"$warnings"
rc=$?
if [ -s "$warnings" ] || [ "$rc" -ne 0 ]; then
  # Doxygen names an undocumented member once per page listing it: each once here.
  awk '!seen[$0]++' "$warnings" | sed "s|^$root/||" >&2
  n=$(awk '!seen[$0]++' "$warnings" | grep -c 'warning:\|error:')
  [ "$n" -gt 0 ] || n=1
  [ "$rc" -eq 0 ] || echo "api_docs: doxygen exited with status $rc" >&2
  echo "api_docs: $n warning(s) (in $warnings)" >&2
  exit 1
fi
echo "$out/html/index.html"
echo "api_docs: $headers headers, no warnings"
