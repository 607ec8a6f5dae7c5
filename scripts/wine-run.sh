#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# wine-run.sh PROGRAM.exe [ARG...]: runs a cross-built Windows program under wine, headless,
# in the build's own wine prefix ($WINEPREFIX, default build-windows/wine), quietly
# (WINEDEBUG=-all). CMake runs the Windows tests through it. The first run creates the prefix.
#   wine-run.sh --server ARG...: runs that wine's server instead (-p: keep it running; -k: stop it).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd -P)
export WINEPREFIX=${WINEPREFIX:-$here/build-windows/wine}
export WINEDEBUG=${WINEDEBUG:--all}
export WINEDLLOVERRIDES=${WINEDLLOVERRIDES:-mscoree,mshtml=}  # no Mono or Gecko prompts
unset DISPLAY
wine=
for w in /usr/lib/wine/wine64 "$(command -v wine64 || true)" "$(command -v wine || true)"; do
  if [ -n "$w" ] && [ -x "$w" ]; then
    wine=$w
    break
  fi
done
[ -n "$wine" ] || { echo "wine-run.sh: wine64 is not installed (apt-get install wine64)" >&2; exit 127; }
if [ "${1:-}" = --server ]; then
  shift
  server=$(dirname "$(readlink -f "$wine")")/wineserver
  [ -x "$server" ] || server=$(command -v wineserver) ||
    { echo "wine-run.sh: no wineserver beside $wine" >&2; exit 127; }
  exec "$server" "$@"
fi
exec "$wine" "$@"
