#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package_test.sh BUILD_DIR: packages the Windows build (scripts/package-windows.sh) and checks
# what a Windows user gets: the zip's and the installer's file lists (read with 7z, never by
# eye), then, under wine, a silent install for all users (the plugin where OBS looks, the
# sender in Program Files, the uninstaller's entry), the installed programs running (the
# sender's help; the plugin loaded by the project's libobs host, which finds no receiver and
# says so), and a silent uninstall that leaves nothing behind.
set -euo pipefail
here=$(cd "$(dirname "$0")/../.." && pwd -P)
build=$(cd "$1" && pwd -P)
wine_run=$here/scripts/wine-run.sh
export WINEPREFIX=${WINEPREFIX:-$build/wine}
fail() { echo "package_test: $*" >&2; exit 1; }

mapfile -t made < <("$here/scripts/package-windows.sh" "$build" | tail -2)
zip=${made[0]} setup=${made[1]}

listing() { 7z l -slt "$1" | sed -n 's/^Path = //p' | tail -n +2 | sort; }
want_zip=$'README.txt\nrdmavideo-obs\nrdmavideo-obs/bin\nrdmavideo-obs/bin/64bit\nrdmavideo-obs/bin/64bit/rdmavideo-obs.dll\nrdmavideo-obs/data\nrdmavideo-obs/data/README.txt\nrdmavideo-sdk\nrdmavideo-sdk/bin\nrdmavideo-sdk/bin/rdmavideo-example-sender.exe\nrdmavideo-sdk/bin/rdmavideo.dll\nrdmavideo-sdk/examples\nrdmavideo-sdk/examples/sender.c\nrdmavideo-sdk/include\nrdmavideo-sdk/include/rdmavideo\nrdmavideo-sdk/include/rdmavideo/rdmavideo.h\nrdmavideo-sdk/lib\nrdmavideo-sdk/lib/librdmavideo.dll.a\nrdmavideo-send\nrdmavideo-send/rdmavideo-send.exe'
got=$(listing "$zip")
[ "$got" = "$want_zip" ] || fail "the zip holds"$'\n'"$got"$'\n'"not"$'\n'"$want_zip"
want_setup=$'$APPDATA/obs-studio/plugins/rdmavideo-obs/bin/64bit/rdmavideo-obs.dll\n$APPDATA/obs-studio/plugins/rdmavideo-obs/data/README.txt\nREADME.txt\nrdmavideo-send.exe\nsdk/bin/rdmavideo-example-sender.exe\nsdk/bin/rdmavideo.dll\nsdk/examples/sender.c\nsdk/include/rdmavideo/rdmavideo.h\nsdk/lib/librdmavideo.dll.a\nuninstall.exe'
got=$(listing "$setup")
[ "$got" = "$want_setup" ] || fail "the installer holds"$'\n'"$got"$'\n'"not"$'\n'"$want_setup"

c=$WINEPREFIX/drive_c
plugin_dir=$c/ProgramData/obs-studio/plugins/rdmavideo-obs
program_dir=$c/Program\ Files/rdmavideo
key='HKLM\Software\Microsoft\Windows\CurrentVersion\Uninstall\rdmavideo'
"$wine_run" "$setup" /S
for f in "$plugin_dir/bin/64bit/rdmavideo-obs.dll" "$plugin_dir/data/README.txt" \
         "$program_dir/rdmavideo-send.exe" "$program_dir/uninstall.exe" \
         "$program_dir/sdk/bin/rdmavideo.dll" "$program_dir/sdk/lib/librdmavideo.dll.a" \
         "$program_dir/sdk/include/rdmavideo/rdmavideo.h"; do
  [ -f "$f" ] || fail "not installed: $f"
done
"$wine_run" reg query "$key" /v DisplayVersion 2>/dev/null | grep -q DisplayVersion ||
  fail "no uninstall entry at $key"
"$wine_run" "$program_dir/rdmavideo-send.exe" --help | grep -q "Usage: rdmavideo-send" ||
  fail "the installed rdmavideo-send.exe does not run"
# The SDK's example loads the installed rdmavideo.dll beside it (no arguments: its usage).
said=$("$wine_run" "$program_dir/sdk/bin/rdmavideo-example-sender.exe" 2>&1 || true)
case $said in *usage:*) ;; *) fail "the installed SDK example does not run: $said" ;; esac
host=$build/tests/windows/obs/obs_host_windows.exe
if [ -f "$host" ]; then
  said=$("$wine_run" "$host" --plugin "$plugin_dir/bin/64bit/rdmavideo-obs.dll" \
           --destinations 127.0.0.1:1 --seconds 0.5 2>/dev/null | tail -1)
  case $said in *'"stop_code":-2'*) ;; *) fail "the installed plugin did not run: $said" ;; esac
fi

"$wine_run" "$program_dir/uninstall.exe" /S
# The uninstaller runs from a copy of itself, after this one has returned.
for _ in $(seq 100); do [ -e "$program_dir" ] || [ -e "$plugin_dir" ] || break; sleep 0.2; done
[ ! -e "$plugin_dir" ] || fail "left behind: $(find "$plugin_dir")"
[ ! -e "$program_dir" ] || fail "left behind: $(find "$program_dir")"
! "$wine_run" reg query "$key" >/dev/null 2>&1 || fail "the uninstall entry is still there"
echo "package_test: the zip and the installer hold the plugin layout; installed, ran and uninstalled cleanly"
