# SPDX-License-Identifier: Apache-2.0
# Options, warnings, sanitizers and detection of the optional parts. Each optional part is
# AUTO (use it when found), ON (fail configure when missing) or OFF.

include(CMakeDependentOption)
if(NOT WIN32)
  find_package(PkgConfig REQUIRED)
endif()

option(RDMAVIDEO_BUILD_TESTS "Build the GoogleTest suites" ON)
# The CTest labels whose test programs are built (unit, integration, gst, kernels, gpu, timing,
# windows); empty builds them all. A build that runs only some labels (CI's sanitizer build
# runs no timing test, its optimised build no test that is only integration or gst) need not
# compile the others.
set(RDMAVIDEO_TEST_LABELS "" CACHE STRING "Build only the test programs with these labels (;-list)")
option(RDMAVIDEO_BUILD_BENCH "Build the benchmark helpers" ON)
option(RDMAVIDEO_BUILD_FUZZ "Build the libFuzzer targets (clang; scripts/fuzz.sh)" OFF)
option(RDMAVIDEO_WERROR "Treat warnings as errors (CI turns this on)" OFF)
set(RDMAVIDEO_SANITIZE "" CACHE STRING "Sanitizers for every target, e.g. address,undefined")

set(RDMAVIDEO_WITH_VERBS AUTO CACHE STRING "rdma-core (libibverbs, librdmacm): AUTO, ON or OFF")
set(RDMAVIDEO_WITH_CUDA AUTO CACHE STRING "CUDA toolkit: AUTO, ON or OFF")
set(RDMAVIDEO_WITH_FFMPEG AUTO CACHE STRING "FFmpeg libav*: AUTO, ON or OFF")
set(RDMAVIDEO_WITH_GSTREAMER AUTO CACHE STRING "GStreamer: AUTO, ON or OFF")
set(RDMAVIDEO_WITH_SDL2 AUTO CACHE STRING "SDL2: AUTO, ON or OFF")
set(RDMAVIDEO_WITH_AVAHI AUTO CACHE STRING "Avahi (DNS-SD discovery): AUTO, ON or OFF")
set(RDMAVIDEO_WITH_OBS AUTO CACHE STRING "OBS plugin (libobs-dev): AUTO, ON or OFF")

add_compile_options(-Wall -Wextra -Wshadow $<$<COMPILE_LANGUAGE:CXX>:-Wnon-virtual-dtor> -Wpointer-arith)
if(RDMAVIDEO_WERROR)
  add_compile_options(-Werror)
endif()
if(CMAKE_UNITY_BUILD)
  # A unity source includes a library's files one after another: a type in a file's anonymous
  # namespace is then not in the main file, which GCC takes for a header's mistake.
  add_compile_options($<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
endif()
if(RDMAVIDEO_SANITIZE)
  add_compile_options(-fsanitize=${RDMAVIDEO_SANITIZE} -fno-omit-frame-pointer
                      -fno-sanitize-recover=all)
  add_link_options(-fsanitize=${RDMAVIDEO_SANITIZE})
  # Line tables are what the sanitizers' reports need; full debug information doubles the time
  # an unoptimised file takes to compile.
  add_compile_options($<$<CONFIG:Debug>:-g1>)
  # Programs not position-independent: a sanitized PIE program applies millions of relative
  # relocations each time it starts (a third of a second for rdmavideo-recv), and the tests
  # start the tools thousands of times. The shipped (optimised) build stays PIE.
  add_link_options($<$<STREQUAL:$<TARGET_PROPERTY:TYPE>,EXECUTABLE>:-no-pie>)
  # libFuzzer's coverage (a build that also gives the fuzz targets) where a fuzz target reaches:
  # the library's static layers. Programs, plugins and shared libraries (the tests' too) go
  # without, as do the ProRes twin and the CUDA stand-in, which the tests run hot.
  set(RDMAVIDEO_FUZZ_COVERAGE OFF)
  if(RDMAVIDEO_SANITIZE MATCHES "fuzzer-no-link")
    set(RDMAVIDEO_FUZZ_COVERAGE ON)
    set(_type "$<TARGET_PROPERTY:TYPE>")
    add_compile_options("$<$<OR:$<STREQUAL:${_type},EXECUTABLE>,$<STREQUAL:${_type},MODULE_LIBRARY>,$<STREQUAL:${_type},SHARED_LIBRARY>>:-fno-sanitize=fuzzer-no-link>")
  endif()
  # The processes the tests start that are not ours (gst-launch-1.0, GStreamer's plugin
  # scanner) load our sanitized plugin only where the sanitizer runtime came first: the tests
  # preload RDMAVIDEO_SANITIZER_RUNTIME into them. GCC links that runtime as a shared library;
  # clang, by default, into each program, where a preloaded copy would be a second one: with
  # clang every program links the shared one too (found by the path it was linked from).
  set(RDMAVIDEO_SANITIZER_RUNTIME "")
  if(RDMAVIDEO_SANITIZE MATCHES "address")
    # What a test that measures resident memory asks (GCC and clang name it differently).
    add_compile_definitions(RDMAVIDEO_ASAN=1)
    if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libclang_rt.asan-${CMAKE_SYSTEM_PROCESSOR}.so
                      OUTPUT_VARIABLE RDMAVIDEO_SANITIZER_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
      get_filename_component(_runtime_dir "${RDMAVIDEO_SANITIZER_RUNTIME}" DIRECTORY)
      add_link_options(-shared-libsan "LINKER:-rpath,${_runtime_dir}")
    else()
      execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libasan.so
                      OUTPUT_VARIABLE RDMAVIDEO_SANITIZER_RUNTIME OUTPUT_STRIP_TRAILING_WHITESPACE)
    endif()
    if(NOT IS_ABSOLUTE "${RDMAVIDEO_SANITIZER_RUNTIME}" OR NOT EXISTS "${RDMAVIDEO_SANITIZER_RUNTIME}")
      message(FATAL_ERROR "RDMAVIDEO_SANITIZE=${RDMAVIDEO_SANITIZE}: the compiler names no shared "
                          "AddressSanitizer runtime (it said '${RDMAVIDEO_SANITIZER_RUNTIME}')")
    endif()
  endif()
endif()

set(_rdmavideo_found "")
set(_rdmavideo_missing "")

# rdmavideo_optional(NAME VAR found-expression...) records a part as found or missing and
# fails when the user forced it ON but it is missing.
macro(rdmavideo_optional name var found)
  if(${found})
    set(RDMAVIDEO_HAVE_${name} ON)
    list(APPEND _rdmavideo_found ${name})
  else()
    set(RDMAVIDEO_HAVE_${name} OFF)
    if(${var} STREQUAL "ON")
      message(FATAL_ERROR "${var}=ON but ${name} was not found")
    endif()
    if(${var} STREQUAL "OFF")
      list(APPEND _rdmavideo_missing "${name} (disabled)")
    else()
      list(APPEND _rdmavideo_missing ${name})
    endif()
  endif()
endmacro()

if(WIN32)
  include(RdmavideoWindows)  # header-only dependencies, GoogleTest from source, no optional parts
else()
  # Required dependencies: every one is a Debian package that scripts/setup.sh installs.
  find_package(Threads REQUIRED)
  find_package(fmt REQUIRED)
  find_package(spdlog REQUIRED)
  find_package(CLI11 REQUIRED)
  find_package(nlohmann_json REQUIRED)
  find_package(tl-expected REQUIRED)
  find_package(OpenSSL 3 REQUIRED COMPONENTS Crypto)
  pkg_check_modules(XXHASH REQUIRED IMPORTED_TARGET libxxhash)
  # --metrics: libmicrohttpd serves it (one polling thread, connection and memory limits);
  # cpp-httplib is the tests' HTTP client.
  pkg_check_modules(MHD REQUIRED IMPORTED_TARGET libmicrohttpd)
  pkg_check_modules(HTTPLIB REQUIRED IMPORTED_TARGET cpp-httplib)

  if(NOT RDMAVIDEO_WITH_VERBS STREQUAL "OFF")
    pkg_check_modules(IBVERBS IMPORTED_TARGET libibverbs)
    pkg_check_modules(RDMACM IMPORTED_TARGET librdmacm)
  endif()
  set(_verbs_found FALSE)
  if(IBVERBS_FOUND AND RDMACM_FOUND)
    set(_verbs_found TRUE)
  endif()
  rdmavideo_optional(rdma-core RDMAVIDEO_WITH_VERBS _verbs_found)

  if(NOT RDMAVIDEO_WITH_CUDA STREQUAL "OFF")
    find_package(CUDAToolkit QUIET)
  endif()
  rdmavideo_optional(CUDA RDMAVIDEO_WITH_CUDA CUDAToolkit_FOUND)

  if(NOT RDMAVIDEO_WITH_FFMPEG STREQUAL "OFF")
    pkg_check_modules(FFMPEG IMPORTED_TARGET libavformat libavcodec libavutil libswscale libswresample libavdevice
                      libavfilter)
  endif()
  rdmavideo_optional(FFmpeg RDMAVIDEO_WITH_FFMPEG FFMPEG_FOUND)

  if(NOT RDMAVIDEO_WITH_GSTREAMER STREQUAL "OFF")
    pkg_check_modules(GST IMPORTED_TARGET gstreamer-1.0 gstreamer-base-1.0 gstreamer-video-1.0)
  endif()
  rdmavideo_optional(GStreamer RDMAVIDEO_WITH_GSTREAMER GST_FOUND)

  if(NOT RDMAVIDEO_WITH_SDL2 STREQUAL "OFF")
    pkg_check_modules(SDL2 IMPORTED_TARGET sdl2)
  endif()
  rdmavideo_optional(SDL2 RDMAVIDEO_WITH_SDL2 SDL2_FOUND)

  # DNS-SD: advertising and browsing through avahi-daemon (Debian's libavahi-client-dev).
  if(NOT RDMAVIDEO_WITH_AVAHI STREQUAL "OFF")
    pkg_check_modules(AVAHI IMPORTED_TARGET avahi-client)
  endif()
  rdmavideo_optional(Avahi RDMAVIDEO_WITH_AVAHI AVAHI_FOUND)

  # The OBS plugin: libobs and its frontend API (Debian's libobs-dev, OBS 29).
  if(NOT RDMAVIDEO_WITH_OBS STREQUAL "OFF")
    find_package(libobs QUIET)
    find_package(obs-frontend-api QUIET)
    find_package(Qt5 QUIET COMPONENTS Widgets)
  endif()
  set(_obs_found FALSE)
  if(libobs_FOUND AND obs-frontend-api_FOUND AND Qt5Widgets_FOUND)
    set(_obs_found TRUE)
  endif()
  rdmavideo_optional(OBS RDMAVIDEO_WITH_OBS _obs_found)
endif()

function(rdmavideo_print_summary)
  string(REPLACE ";" ", " found "${_rdmavideo_found}")
  string(REPLACE ";" ", " missing "${_rdmavideo_missing}")
  message(STATUS "rdmavideo ${PROJECT_VERSION} (${CMAKE_BUILD_TYPE})")
  message(STATUS "  found:   ${found}")
  message(STATUS "  missing: ${missing}")
  if(RDMAVIDEO_SANITIZE)
    message(STATUS "  sanitizers: ${RDMAVIDEO_SANITIZE}")
  endif()
endfunction()

# rdmavideo_install_destination(OUT PATH): PATH relative to the install prefix when it lies
# under it (a package's staging folder then gets it), else PATH as it is (a plugin folder
# another prefix owns, for a plain `cmake --install`).
function(rdmavideo_install_destination out path)
  file(RELATIVE_PATH rel "${CMAKE_INSTALL_PREFIX}" "${path}")
  if(IS_ABSOLUTE "${path}" AND NOT rel MATCHES "^\\.\\.")
    set(${out} "${rel}" PARENT_SCOPE)
  else()
    set(${out} "${path}" PARENT_SCOPE)
  endif()
endfunction()
