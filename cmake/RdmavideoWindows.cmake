# SPDX-License-Identifier: Apache-2.0
# The Windows build's dependencies. Debian has no MinGW builds of the libraries the Linux build
# links, but the ones it needs are header-only or can be: fmt (FMT_HEADER_ONLY), spdlog
# (SPDLOG_HEADER_ONLY over that fmt), nlohmann-json, tl-expected, CLI11, toml++ and xxHash
# (XXH_INLINE_ALL). Their host headers are linked into an include folder of this build's own,
# so the cross compiler never searches /usr/include (which holds Linux's system headers).
# GoogleTest is built from Debian's sources. Everything links statically: a program or DLL
# needs nothing but Windows's own DLLs.
set(_deps_include ${CMAKE_BINARY_DIR}/windows-deps/include)
file(MAKE_DIRECTORY ${_deps_include})
foreach(dep fmt spdlog nlohmann tl CLI toml++ xxhash.h)
  if(NOT EXISTS /usr/include/${dep})
    message(FATAL_ERROR "/usr/include/${dep} is missing: scripts/setup.sh installs it")
  endif()
  if(NOT EXISTS ${_deps_include}/${dep})
    file(CREATE_LINK /usr/include/${dep} ${_deps_include}/${dep} SYMBOLIC)
  endif()
endforeach()

find_package(Threads REQUIRED)
add_library(rdmavideo_windows_deps INTERFACE)
target_include_directories(rdmavideo_windows_deps SYSTEM INTERFACE ${_deps_include})
target_compile_definitions(rdmavideo_windows_deps INTERFACE
  FMT_HEADER_ONLY SPDLOG_HEADER_ONLY SPDLOG_FMT_EXTERNAL XXH_INLINE_ALL
  WIN32_LEAN_AND_MEAN NOMINMAX _WIN32_WINNT=0x0A00)
foreach(alias fmt::fmt spdlog::spdlog nlohmann_json::nlohmann_json tl::expected CLI11::CLI11
              PkgConfig::XXHASH)
  add_library(${alias} ALIAS rdmavideo_windows_deps)
endforeach()
add_link_options(-static)

if(RDMAVIDEO_BUILD_TESTS)
  set(_gtest_src /usr/src/googletest)
  if(NOT EXISTS ${_gtest_src}/CMakeLists.txt)
    message(FATAL_ERROR "${_gtest_src} is missing: scripts/setup.sh installs googletest")
  endif()
  set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
  set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
  set(gtest_disable_pthreads OFF CACHE BOOL "" FORCE)
  add_subdirectory(${_gtest_src} ${CMAKE_BINARY_DIR}/googletest EXCLUDE_FROM_ALL SYSTEM)
endif()

foreach(part rdma-core CUDA FFmpeg GStreamer SDL2 OBS)
  set(RDMAVIDEO_HAVE_${part} OFF)
  list(APPEND _rdmavideo_missing "${part} (not on Windows)")
endforeach()
