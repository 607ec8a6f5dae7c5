#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# package-windows.sh [BUILD_DIR]: packages the Windows build (scripts/build-windows.sh; default
# build-windows) for a Windows user, into BUILD_DIR/package/:
#   rdmavideo-VERSION-windows-x64.zip        rdmavideo-obs\ (OBS's plugin folder layout:
#                                            bin\64bit\rdmavideo-obs.dll, data\), rdmavideo-send\,
#                                            rdmavideo-sdk\ (bin\rdmavideo.dll and the C example,
#                                            lib\librdmavideo.dll.a, include\, examples\),
#                                            README.txt
#   rdmavideo-VERSION-windows-x64-setup.exe  the NSIS installer (packaging/windows/rdmavideo.nsi)
# The programs are stripped of their debugging information on the way.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd -P)
build=$(cd "${1:-$here/build-windows}" && pwd -P)
version=$(sed -n 's/^project(rdmavideo VERSION \([0-9.]*\).*/\1/p' "$here/CMakeLists.txt")
out=$build/package
stage=$out/stage
for f in "$build/obs-plugin/rdmavideo-obs.dll" "$build/sender/rdmavideo-send.exe" \
         "$build/sdk/rdmavideo.dll" "$build/sdk/rdmavideo-example-sender.exe"; do
  [ -f "$f" ] || { echo "package-windows.sh: $f is not built (scripts/build-windows.sh)" >&2; exit 1; }
done
rm -rf "$out"
mkdir -p "$stage/rdmavideo-obs/bin/64bit" "$stage/rdmavideo-obs/data" "$stage/rdmavideo-send"
x86_64-w64-mingw32-strip -o "$stage/rdmavideo-obs/bin/64bit/rdmavideo-obs.dll" \
  "$build/obs-plugin/rdmavideo-obs.dll"
x86_64-w64-mingw32-strip -o "$stage/rdmavideo-send/rdmavideo-send.exe" "$build/sender/rdmavideo-send.exe"
# The SDK: the DLL, its import library, the header, the C example and its program.
sdk=$stage/rdmavideo-sdk
mkdir -p "$sdk/bin" "$sdk/lib" "$sdk/include/rdmavideo" "$sdk/examples"
x86_64-w64-mingw32-strip -o "$sdk/bin/rdmavideo.dll" "$build/sdk/rdmavideo.dll"
x86_64-w64-mingw32-strip -o "$sdk/bin/rdmavideo-example-sender.exe" \
  "$build/sdk/rdmavideo-example-sender.exe"
cp "$build/sdk/librdmavideo.dll.a" "$sdk/lib/"
cp "$here/sdk/include/rdmavideo/rdmavideo.h" "$sdk/include/rdmavideo/"
cp "$here/examples/c_sender/sender.c" "$sdk/examples/"
cp "$here/packaging/windows/plugin-data-README.txt" "$stage/rdmavideo-obs/data/README.txt"
cp "$here/packaging/windows/README.txt" "$stage/README.txt"
name=rdmavideo-$version-windows-x64
(cd "$stage" && 7z a -tzip -bd -bso0 "$out/$name.zip" rdmavideo-obs rdmavideo-send rdmavideo-sdk \
  README.txt)
makensis -V2 -DVERSION="$version" -DSTAGE="$stage" -DOUT="$out/$name-setup.exe" \
  "$here/packaging/windows/rdmavideo.nsi"
echo "$out/$name.zip"
echo "$out/$name-setup.exe"
