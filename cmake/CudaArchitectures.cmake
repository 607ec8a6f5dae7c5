# SPDX-License-Identifier: Apache-2.0
# Which GPU architectures the kernels are built for, from the nvcc that builds them.
#
#   rdmavideo_cuda_architectures(NVCC_VERSION SASS_VAR PTX_VAR)
#
# SASS for each generation from Turing (sm_75) to Blackwell (sm_120) that this nvcc knows,
# PTX for the lowest and the highest of them: the highest so later GPUs JIT it, the lowest
# so a driver with no SASS it can run for a GPU in between (an sm_87 Jetson, say) still has a
# JIT path. An older nvcc lacks the newer architectures (sm_89 and sm_90 need 11.8, sm_100 and
# sm_120 12.8): they are left out with a message, rather than failing the build.
#
# Run as a script to see the choice for a given version (the test of this file does):
#   cmake -DNVCC_VERSION=12.4 -P cmake/CudaArchitectures.cmake
set(_RDMAVIDEO_CUDA_ARCHES
  75 10.0    # Turing
  80 11.0    # Ampere A100
  86 11.1    # Ampere RTX 30
  89 11.8    # Ada
  90 11.8    # Hopper
  100 12.8   # Blackwell B200
  120 12.8)  # Blackwell RTX 50

function(rdmavideo_cuda_architectures nvcc_version sass_var ptx_var)
  set(sass)
  set(dropped)
  set(arches ${_RDMAVIDEO_CUDA_ARCHES})
  list(LENGTH arches n)
  math(EXPR last "${n} - 1")
  foreach(i RANGE 0 ${last} 2)
    math(EXPR j "${i} + 1")
    list(GET arches ${i} arch)
    list(GET arches ${j} since)
    if(nvcc_version VERSION_LESS since)
      list(APPEND dropped "sm_${arch} (needs ${since})")
    else()
      list(APPEND sass ${arch})
    endif()
  endforeach()
  if(dropped AND sass)
    list(JOIN dropped ", " text)
    message(STATUS "CUDA kernels: nvcc ${nvcc_version} does not know ${text}: left out; "
                   "GPUs of those generations run the PTX of the newest architecture built, where the driver can")
  endif()
  set(ptx)
  if(sass)
    list(GET sass 0 lowest)
    list(GET sass -1 highest)
    list(APPEND ptx ${lowest})
    if(NOT highest EQUAL lowest)
      list(APPEND ptx ${highest})
    endif()
    list(JOIN sass " " sass_text)
    list(JOIN ptx " " ptx_text)
    message(STATUS "CUDA kernels: nvcc ${nvcc_version}: SASS for ${sass_text}; PTX for ${ptx_text}")
  else()
    message(STATUS "CUDA kernels: nvcc ${nvcc_version} knows none of the architectures built for (it is "
                   "older than 10.0): no kernels")
  endif()
  set(${sass_var} ${sass} PARENT_SCOPE)
  set(${ptx_var} ${ptx} PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT DEFINED NVCC_VERSION)
    message(FATAL_ERROR "usage: cmake -DNVCC_VERSION=12.4 -P ${CMAKE_CURRENT_LIST_FILE}")
  endif()
  rdmavideo_cuda_architectures(${NVCC_VERSION} sass ptx)
endif()
