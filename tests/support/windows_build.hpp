// SPDX-License-Identifier: Apache-2.0
// Tests of what the Windows cross-build made (scripts/build-windows.sh), run under wine into
// this build's programs: they skip, naming what to build, where it was not built, and run in
// the wine prefix whose server the tests' fixture started (tests/windows/wine_fixture.cmake).
// The test defines RDMAVIDEO_WINDOWS_BUILD_DIR.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <initializer_list>

namespace rdmavideo::testing {

/// For a test's SetUp: skips it where any of `programs` is missing, else sets WINEPREFIX.
inline void use_windows_build(std::initializer_list<std::filesystem::path> programs) {
  for (const auto& p : programs) {
    if (!std::filesystem::exists(p)) {
      GTEST_SKIP() << p << " is not built: scripts/build-windows.sh builds it";
    }
  }
  setenv("WINEPREFIX", RDMAVIDEO_WINDOWS_BUILD_DIR "/wine", 1);  // the fixture's server
}

}  // namespace rdmavideo::testing
