#!/usr/bin/env bash
# check_format.sh [--fix]: every tracked C++ file is clang-format clean
# (.clang-format pins version 14; Debian's clang-format package), every
# tracked Python file ruff clean (ruff.toml; pinned in .venv by setup.sh)
# and every tracked shell script clean by Debian's shellcheck
# (.shellcheckrc). --fix rewrites what clang-format and ruff can fix.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 1
source scripts/env.sh
fmt=$(command -v clang-format-14 || command -v clang-format) ||
  { echo "check_format: clang-format (14) not found; run ./fx setup" >&2; exit 1; }
for tool in "$FX_VENV/bin/ruff" shellcheck; do
  command -v "$tool" >/dev/null || { echo "check_format: $tool not found; run ./fx setup" >&2; exit 1; }
done
mapfile -t files < <(git ls-files '*.cpp' '*.hpp' '*.h' '*.cc')
mapfile -t python < <(git ls-files '*.py')
# Shell scripts: *.sh and the extension-less bash scripts, named here.
mapfile -t shell < <(git ls-files '*.sh' fx .ci/run scripts/fx-run)
if [ "${1:-}" = "--fix" ]; then
  "$fmt" -i "${files[@]}"
  "$FX_VENV/bin/ruff" check --no-cache --fix "${python[@]}"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  "$fmt" --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
rc=0
if [ ${#bad[@]} -gt 0 ]; then
  echo "check_format: ${#bad[@]} file(s) are not clang-format clean (scripts/check_format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  rc=1
fi
"$FX_VENV/bin/ruff" check --no-cache --quiet "${python[@]}" >&2 ||
  { echo "check_format: ruff found the above in the Python files" >&2; rc=1; }
shellcheck -f gcc "${shell[@]}" >&2 ||
  { echo "check_format: shellcheck found the above in the shell scripts" >&2; rc=1; }
[ $rc -eq 0 ] && echo "check_format: ${#files[@]} C++, ${#python[@]} Python and ${#shell[@]} shell files clean"
exit $rc
