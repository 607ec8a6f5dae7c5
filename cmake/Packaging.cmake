# SPDX-License-Identifier: Apache-2.0
# What `cmake --install` puts where on Linux, by component, and the Debian packages CPack makes
# of them (scripts/package-debian.sh):
#
#   tools      rdmavideo-tools          the programs, their man pages, the systemd unit, configs
#   sdk        librdmavideo0            librdmavideo.so.0
#   sdk_dev    librdmavideo-dev         the header, the .so link, CMake package, pkg-config,
#                                       the examples
#   gstreamer  gstreamer1.0-rdmavideo   rdmasink and rdmasrc, in GStreamer's plugin folder
#   obs        obs-rdmavideo            the OBS output, where Debian's obs-studio looks
#   python     python3-rdmavideo        the Python module, in Debian's dist-packages
#
# CPack rather than a debian/ folder: the packages are made from the build CI has already
# compiled and tested (no second build with other flags), and CPack's DEB generator does what
# debhelper would here: shlibs and ldconfig triggers for the library, dpkg-shlibdeps for every
# package's dependencies, stripped binaries, md5sums.
include(GNUInstallDirs)

set(_doc ${CMAKE_INSTALL_DATADIR}/doc)
set(_packages tools:rdmavideo-tools sdk:librdmavideo0 sdk_dev:librdmavideo-dev
              gstreamer:gstreamer1.0-rdmavideo obs:obs-rdmavideo python:python3-rdmavideo)

# Every package's copyright and Debian changelog, where Debian wants them.
set(_changelog_gz ${CMAKE_BINARY_DIR}/packaging/changelog.Debian.gz)
add_custom_command(OUTPUT ${_changelog_gz}
  COMMAND gzip -9nc ${PROJECT_SOURCE_DIR}/packaging/debian/changelog > ${_changelog_gz}
  DEPENDS ${PROJECT_SOURCE_DIR}/packaging/debian/changelog VERBATIM)
add_custom_target(rdmavideo_changelog ALL DEPENDS ${_changelog_gz})
foreach(p IN LISTS _packages)
  string(REPLACE ":" ";" p "${p}")
  list(GET p 0 component)
  list(GET p 1 package)
  install(FILES ${PROJECT_SOURCE_DIR}/packaging/debian/copyright ${_changelog_gz}
          DESTINATION ${_doc}/${package} COMPONENT ${component})
endforeach()

# The programs' man pages, from their --help (help2man).
find_program(RDMAVIDEO_HELP2MAN help2man)
if(RDMAVIDEO_HELP2MAN AND NOT RDMAVIDEO_SANITIZE)  # a sanitizer build's programs are for tests
  set(_pages "")
  set(_what_rdmavideo-send "send raw video frames into the ring of a receiver over RDMA or TCP")
  set(_what_rdmavideo-recv "receive raw video frames: verify, record, composite or show them")
  set(_what_rdmavideo-doctor "check the RDMA and GPU set-up of a machine for rdmavideo")
  foreach(program rdmavideo-send rdmavideo-recv rdmavideo-doctor)
    if(NOT TARGET ${program})
      continue()
    endif()
    set(what "${_what_${program}}")
    set(page ${CMAKE_BINARY_DIR}/packaging/man/${program}.1.gz)
    add_custom_command(OUTPUT ${page}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_BINARY_DIR}/packaging/man
      COMMAND sh -c "'${RDMAVIDEO_HELP2MAN}' --no-info --name='${what}' --version-string=${PROJECT_VERSION} --no-discard-stderr '$<TARGET_FILE:${program}>' | sed 's,${CMAKE_BINARY_DIR}/[a-z]*/,,g' | gzip -9n > '${page}'"
      DEPENDS ${program} VERBATIM)
    list(APPEND _pages ${page})
  endforeach()
  add_custom_target(rdmavideo_man_pages ALL DEPENDS ${_pages})
  install(FILES ${_pages} DESTINATION ${CMAKE_INSTALL_MANDIR}/man1 COMPONENT tools)
endif()

# The receiver as a service, naming where the package puts the program.
file(READ ${PROJECT_SOURCE_DIR}/configs/rdmavideo-recv.service _unit)
string(REPLACE "/usr/local/bin/" "${CMAKE_INSTALL_FULL_BINDIR}/" _unit "${_unit}")
file(WRITE ${CMAKE_BINARY_DIR}/packaging/rdmavideo-recv.service "${_unit}")
install(FILES ${CMAKE_BINARY_DIR}/packaging/rdmavideo-recv.service
        DESTINATION lib/systemd/system COMPONENT tools)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/configs/ DESTINATION ${_doc}/rdmavideo-tools/examples
        COMPONENT tools FILES_MATCHING PATTERN "*.toml" PATTERN "README.md")

# The examples beside the SDK's header.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/examples/
        DESTINATION ${_doc}/librdmavideo-dev/examples COMPONENT sdk_dev)
install(FILES ${PROJECT_SOURCE_DIR}/docs/sdk.md DESTINATION ${_doc}/librdmavideo-dev
        COMPONENT sdk_dev)

# The Python module, where Debian's python3 finds it.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/python/rdmavideo
        DESTINATION lib/python3/dist-packages COMPONENT python
        PATTERN "__pycache__" EXCLUDE)

# ---- CPack: the Debian packages ----------------------------------------------------------------
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME rdmavideo)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "rdmavideo developers <developers@rdmavideo.org>")
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION video)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS_POLICY ">=")
# The library's own package is found by dpkg-shlibdeps for the packages that link it.
set(CPACK_DEBIAN_ENABLE_COMPONENT_DEPENDS ON)
set(CPACK_COMPONENTS_ALL tools sdk sdk_dev gstreamer obs python)

set(CPACK_DEBIAN_TOOLS_PACKAGE_NAME rdmavideo-tools)
set(CPACK_DEBIAN_TOOLS_PACKAGE_SECTION video)
set(CPACK_COMPONENT_TOOLS_DESCRIPTION "raw video frames between machines over RDMA or TCP: the programs
rdmavideo-send captures, decodes or generates frames and writes them into a
receiver's ring of frame buffers with RDMA WRITE where the fabric allows and
over TCP elsewhere; rdmavideo-recv verifies, records (ProRes, FFV1, H.264,
with every audio track), composites or shows them; rdmavideo-doctor checks a
machine's RDMA and GPU set-up. With a systemd unit for a recording machine.")
set(CPACK_DEBIAN_SDK_PACKAGE_NAME librdmavideo0)
set(CPACK_DEBIAN_SDK_PACKAGE_SECTION libs)
set(CPACK_COMPONENT_SDK_DESCRIPTION "raw video frames between machines over RDMA or TCP: the library
librdmavideo sends frames from buffers it lends (host or GPU memory) into a
receiver's ring of frame buffers, and receives them, lending each frame in its
ring slot: no copy on either side. Its C API is stable (one SONAME).")
set(CPACK_DEBIAN_SDK_DEV_PACKAGE_NAME librdmavideo-dev)
set(CPACK_DEBIAN_SDK_DEV_PACKAGE_SECTION libdevel)
set(CPACK_COMPONENT_SDK_DEV_DEPENDS sdk)
set(CPACK_COMPONENT_SDK_DEV_DESCRIPTION "raw video frames between machines over RDMA or TCP: development files
The C API's header (rdmavideo/rdmavideo.h), the link to the library, its CMake
package (find_package(rdmavideo)) and pkg-config file, and examples in C, C++
and Python.")
set(CPACK_DEBIAN_GSTREAMER_PACKAGE_NAME gstreamer1.0-rdmavideo)
set(CPACK_COMPONENT_GSTREAMER_DESCRIPTION "raw video frames between machines over RDMA or TCP: GStreamer plugin
rdmasink and rdmasrc send and receive raw video with its audio tracks between
GStreamer pipelines and rdmavideo's programs, zero copy on both sides, in host
or CUDA memory.")
set(CPACK_DEBIAN_OBS_PACKAGE_NAME obs-rdmavideo)
set(CPACK_DEBIAN_OBS_PACKAGE_DEPENDS obs-studio)
set(CPACK_COMPONENT_OBS_DESCRIPTION "raw video frames between machines over RDMA or TCP: OBS output
Sends OBS Studio's program picture and its audio tracks, uncompressed, to
rdmavideo receivers (a recorder writing ProRes, say), from Tools in OBS.")
set(CPACK_DEBIAN_PYTHON_PACKAGE_NAME python3-rdmavideo)
set(CPACK_DEBIAN_PYTHON_PACKAGE_SECTION python)
set(CPACK_DEBIAN_PYTHON_PACKAGE_ARCHITECTURE all)
set(CPACK_COMPONENT_PYTHON_DEPENDS sdk)
set(CPACK_DEBIAN_PYTHON_PACKAGE_DEPENDS "python3:any, python3-numpy")
set(CPACK_COMPONENT_PYTHON_DESCRIPTION "raw video frames between machines over RDMA or TCP: Python module
import rdmavideo: a Sender and a Receiver over librdmavideo, frames as numpy
arrays viewing the library's buffers and ring slots, without a copy.")
# The library's package activates ldconfig.
file(WRITE ${CMAKE_BINARY_DIR}/packaging/triggers "activate-noawait ldconfig\n")
set(CPACK_DEBIAN_SDK_PACKAGE_CONTROL_EXTRA ${CMAKE_BINARY_DIR}/packaging/triggers)
set(CPACK_DEBIAN_SDK_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
