# SPDX-License-Identifier: Apache-2.0
# The fixture every test that runs a Windows program shares (FIXTURES_REQUIRED wine): wine's
# server started before them in the Windows build's prefix, and stopped after. A server that a
# test started itself would hold the pipes of the run that started it, and CTest would wait.
# Starting it also sets the prefix's graphics driver to wine's null one: windows (the OBS
# plugin's dialog) are made and driven without a display.
set(_wine_prefix ${RDMAVIDEO_WINDOWS_BUILD_DIR}/wine)
add_test(NAME windows_wine_start
         COMMAND ${CMAKE_COMMAND} -E env WINEPREFIX=${_wine_prefix} bash -c
                 "${PROJECT_SOURCE_DIR}/scripts/wine-run.sh reg add 'HKCU\\Software\\Wine\\Drivers' /v Graphics /d null /f >/dev/null 2>&1")
set_tests_properties(windows_wine_start PROPERTIES FIXTURES_SETUP wine LABELS windows)
add_test(NAME windows_wine_stop
         COMMAND ${CMAKE_COMMAND} -E env WINEPREFIX=${_wine_prefix} bash -c "${PROJECT_SOURCE_DIR}/scripts/wine-run.sh --server -k || true")
set_tests_properties(windows_wine_stop PROPERTIES FIXTURES_CLEANUP wine LABELS windows)
