; SPDX-License-Identifier: Apache-2.0
; The Windows installer (NSIS): the OBS plugin for every user of the machine, where OBS looks
; for plugins (%ProgramData%\obs-studio\plugins\rdmavideo-obs\bin\64bit and ...\data), and
; rdmavideo-send.exe in Program Files; an uninstaller that removes both, and its entry in
; Apps & features. scripts/package-windows.sh builds it:
;   makensis -DVERSION=X.Y.Z -DSTAGE=<staged files> -DOUT=<setup.exe> rdmavideo.nsi
; 64-bit, as OBS for Windows is (and its plugins must be)
Target amd64-unicode
SetCompressor /SOLID lzma
RequestExecutionLevel admin
Name "rdmavideo ${VERSION}"
OutFile "${OUT}"
InstallDir "$PROGRAMFILES64\rdmavideo"
ShowInstDetails show
ShowUninstDetails show

!define UNINSTALL_KEY "Software\Microsoft\Windows\CurrentVersion\Uninstall\rdmavideo"
; $APPDATA is %ProgramData% once SetShellVarContext is all
!define PLUGIN_DIR "$APPDATA\obs-studio\plugins\rdmavideo-obs"

Page directory
Page instfiles
UninstPage uninstConfirm
UninstPage instfiles

Section "rdmavideo"
  SetShellVarContext all
  SetRegView 64
  SetOutPath "${PLUGIN_DIR}\bin\64bit"
  File "${STAGE}\rdmavideo-obs\bin\64bit\rdmavideo-obs.dll"
  SetOutPath "${PLUGIN_DIR}\data"
  File "${STAGE}\rdmavideo-obs\data\README.txt"
  SetOutPath "$INSTDIR"
  File "${STAGE}\rdmavideo-send\rdmavideo-send.exe"
  File "${STAGE}\README.txt"
  ; The SDK: the DLL and its import library, the C API's header, the C example and its program.
  SetOutPath "$INSTDIR\sdk\bin"
  File "${STAGE}\rdmavideo-sdk\bin\rdmavideo.dll"
  File "${STAGE}\rdmavideo-sdk\bin\rdmavideo-example-sender.exe"
  SetOutPath "$INSTDIR\sdk\lib"
  File "${STAGE}\rdmavideo-sdk\lib\librdmavideo.dll.a"
  SetOutPath "$INSTDIR\sdk\include\rdmavideo"
  File "${STAGE}\rdmavideo-sdk\include\rdmavideo\rdmavideo.h"
  SetOutPath "$INSTDIR\sdk\examples"
  File "${STAGE}\rdmavideo-sdk\examples\sender.c"
  SetOutPath "$INSTDIR"
  WriteUninstaller "$INSTDIR\uninstall.exe"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "DisplayName" "rdmavideo ${VERSION} (OBS output and sender)"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "DisplayVersion" "${VERSION}"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "Publisher" "rdmavideo"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "InstallLocation" "$INSTDIR"
  WriteRegStr HKLM "${UNINSTALL_KEY}" "UninstallString" '"$INSTDIR\uninstall.exe"'
  WriteRegStr HKLM "${UNINSTALL_KEY}" "QuietUninstallString" '"$INSTDIR\uninstall.exe" /S'
  WriteRegDWORD HKLM "${UNINSTALL_KEY}" "NoModify" 1
  WriteRegDWORD HKLM "${UNINSTALL_KEY}" "NoRepair" 1
SectionEnd

Section "Uninstall"
  SetShellVarContext all
  SetRegView 64
  Delete "${PLUGIN_DIR}\bin\64bit\rdmavideo-obs.dll"
  Delete "${PLUGIN_DIR}\data\README.txt"
  RMDir "${PLUGIN_DIR}\bin\64bit"
  RMDir "${PLUGIN_DIR}\bin"
  RMDir "${PLUGIN_DIR}\data"
  RMDir "${PLUGIN_DIR}"
  Delete "$INSTDIR\sdk\bin\rdmavideo.dll"
  Delete "$INSTDIR\sdk\bin\rdmavideo-example-sender.exe"
  Delete "$INSTDIR\sdk\lib\librdmavideo.dll.a"
  Delete "$INSTDIR\sdk\include\rdmavideo\rdmavideo.h"
  Delete "$INSTDIR\sdk\examples\sender.c"
  RMDir "$INSTDIR\sdk\bin"
  RMDir "$INSTDIR\sdk\lib"
  RMDir "$INSTDIR\sdk\include\rdmavideo"
  RMDir "$INSTDIR\sdk\include"
  RMDir "$INSTDIR\sdk\examples"
  RMDir "$INSTDIR\sdk"
  Delete "$INSTDIR\rdmavideo-send.exe"
  Delete "$INSTDIR\README.txt"
  Delete "$INSTDIR\uninstall.exe"
  RMDir "$INSTDIR"
  DeleteRegKey HKLM "${UNINSTALL_KEY}"
SectionEnd
