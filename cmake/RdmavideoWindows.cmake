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

# libobs' headers for the OBS plugin (Debian's libobs-dev, as on Linux): linked in one by one
# into a folder of their own, with the one Windows header Debian leaves out.
set(RDMAVIDEO_WINDOWS_OBS OFF)
if(EXISTS /usr/include/obs/obs-module.h AND EXISTS /usr/include/simde)
  set(_obs_include ${CMAKE_BINARY_DIR}/windows-deps/obs)
  file(MAKE_DIRECTORY ${_obs_include}/util)
  file(GLOB _obs_entries RELATIVE /usr/include/obs /usr/include/obs/* /usr/include/obs/util/*)
  foreach(entry ${_obs_entries})
    if(NOT entry STREQUAL "util" AND NOT EXISTS ${_obs_include}/${entry})
      file(CREATE_LINK /usr/include/obs/${entry} ${_obs_include}/${entry} SYMBOLIC)
    endif()
  endforeach()
  configure_file(${CMAKE_CURRENT_LIST_DIR}/windows/threading-windows.h
                 ${_obs_include}/util/threading-windows.h COPYONLY)
  if(NOT EXISTS ${_deps_include}/simde)
    file(CREATE_LINK /usr/include/simde ${_deps_include}/simde SYMBOLIC)
  endif()
  add_library(rdmavideo_windows_obs_headers INTERFACE)
  target_include_directories(rdmavideo_windows_obs_headers SYSTEM INTERFACE ${_obs_include})
  find_program(RDMAVIDEO_DLLTOOL NAMES x86_64-w64-mingw32-dlltool REQUIRED)
  set(RDMAVIDEO_WINDOWS_OBS ON)
else()
  list(APPEND _rdmavideo_missing "OBS plugin (libobs' headers: apt-get install libobs-dev)")
endif()

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
