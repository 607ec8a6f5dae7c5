# SPDX-License-Identifier: Apache-2.0
# CUDA kernels beside the code that owns them: each room with kernels has its own .cu, built
# by nvcc into a fat binary (SASS for each GPU generation from Turing on that this nvcc knows,
# PTX for the lowest and highest of them, cmake/CudaArchitectures.cmake) and embedded in that
# room's library with the toolkit's version, to be loaded through the driver API
# (rdmavideo::cuda::Module, rdmavideo/cuda.hpp), so nothing links the CUDA runtime.
#
#   rdmavideo_cuda_kernels(TARGET target SYMBOL ns::name CU file.cu
#                          [DEPENDS header...] [INCLUDES dir...])
#
# defines `const rdmavideo::cuda::EmbeddedImage ns::name` in TARGET. Without the toolkit the
# image is empty and says so (EmbeddedImage::built()). RDMAVIDEO_NVCC_VERSION stands in for
# nvcc's own version, to see what an older one builds; RDMAVIDEO_HAVE_CUDA_KERNELS says
# whether this build has kernels.
include(${CMAKE_CURRENT_LIST_DIR}/CudaArchitectures.cmake)
set(RDMAVIDEO_KERNEL_SASS)
set(RDMAVIDEO_KERNEL_PTX)
if(RDMAVIDEO_HAVE_CUDA)
  set(RDMAVIDEO_NVCC_VERSION "${CUDAToolkit_VERSION}" CACHE STRING
      "nvcc's version, as the kernels' architectures are chosen for it (default: the toolkit's)")
  rdmavideo_cuda_architectures("${RDMAVIDEO_NVCC_VERSION}" RDMAVIDEO_KERNEL_SASS
                               RDMAVIDEO_KERNEL_PTX)
endif()
if(RDMAVIDEO_KERNEL_SASS)
  set(RDMAVIDEO_HAVE_CUDA_KERNELS ON)
else()
  set(RDMAVIDEO_HAVE_CUDA_KERNELS OFF)
endif()

function(rdmavideo_cuda_kernels)
  cmake_parse_arguments(K "" "TARGET;SYMBOL;CU" "DEPENDS;INCLUDES" ${ARGN})
  get_filename_component(stem "${K_CU}" NAME_WE)
  get_filename_component(cu "${K_CU}" ABSOLUTE)
  set(image_cpp ${CMAKE_CURRENT_BINARY_DIR}/${stem}_image.cpp)
  set(embed -DOUTPUT=${image_cpp} -DSYMBOL=${K_SYMBOL})
  if(RDMAVIDEO_HAVE_CUDA_KERNELS)
    set(fatbin ${CMAKE_CURRENT_BINARY_DIR}/${stem}.fatbin)
    set(gencode)
    foreach(arch ${RDMAVIDEO_KERNEL_SASS})
      list(APPEND gencode -gencode arch=compute_${arch},code=sm_${arch})
    endforeach()
    foreach(arch ${RDMAVIDEO_KERNEL_PTX})
      list(APPEND gencode -gencode arch=compute_${arch},code=compute_${arch})
    endforeach()
    set(includes)
    foreach(dir ${K_INCLUDES})
      list(APPEND includes -I${dir})
    endforeach()
    string(REGEX MATCH "^[0-9]+\\.[0-9]+" toolkit "${CUDAToolkit_VERSION}")
    list(JOIN RDMAVIDEO_KERNEL_SASS "," sass)
    list(JOIN RDMAVIDEO_KERNEL_PTX "," ptx)
    add_custom_command(OUTPUT ${fatbin}
      COMMAND ${CUDAToolkit_NVCC_EXECUTABLE} --fatbin -O3 ${gencode} ${includes} -o ${fatbin} ${cu}
      DEPENDS ${cu} ${K_DEPENDS}
      COMMENT "nvcc: building ${stem}.cu's kernels")
    list(APPEND embed -DINPUT=${fatbin} -DTOOLKIT=${toolkit} -DSASS=${sass} -DPTX=${ptx})
    set(depends ${fatbin})
  else()
    set(depends)
  endif()
  add_custom_command(OUTPUT ${image_cpp}
    COMMAND ${CMAKE_COMMAND} ${embed} -P ${PROJECT_SOURCE_DIR}/cmake/EmbedBinary.cmake
    DEPENDS ${depends} ${PROJECT_SOURCE_DIR}/cmake/EmbedBinary.cmake
    COMMENT "embedding ${stem}.cu's kernels")
  target_sources(${K_TARGET} PRIVATE ${image_cpp})
endfunction()
