// SPDX-License-Identifier: Apache-2.0
// What the test programs include that is not the project's: GoogleTest, nlohmann-json, fmt and
// the standard library, compiled once in a build into the test programs' precompiled header
// (tests/CMakeLists.txt, RDMAVIDEO_TEST_PCH). Nothing of the project's is here: a change to its
// headers recompiles the programs that include them, not this.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>
