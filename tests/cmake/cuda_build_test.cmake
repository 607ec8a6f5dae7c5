# SPDX-License-Identifier: Apache-2.0
# The kernels' build, checked without building them (cmake -P, label unit):
# - the architectures an nvcc is asked for, for one older than 12.8 (simulated: no nvcc is
#   run) and for 13.0: newer ones left out with a message, PTX for the lowest and highest;
# - the embedded image: lines of 32 bytes (CMake's regular expressions have no {32}), every
#   byte kept, and what built it recorded beside it.
#   cmake -DSOURCE_DIR=... -DWORK_DIR=... -P tests/cmake/cuda_build_test.cmake
include(${SOURCE_DIR}/cmake/CudaArchitectures.cmake)

function(expect what got want)
  if(NOT "${got}" STREQUAL "${want}")
    message(FATAL_ERROR "${what}: got \"${got}\", want \"${want}\"")
  endif()
endfunction()

rdmavideo_cuda_architectures(12.4 sass ptx)
expect("SASS for nvcc 12.4" "${sass}" "75;80;86;89;90")
expect("PTX for nvcc 12.4" "${ptx}" "75;90")
rdmavideo_cuda_architectures(13.0 sass ptx)
expect("SASS for nvcc 13.0" "${sass}" "75;80;86;89;90;100;120")
expect("PTX for nvcc 13.0" "${ptx}" "75;120")
rdmavideo_cuda_architectures(11.4 sass ptx)
expect("SASS for nvcc 11.4" "${sass}" "75;80;86")
rdmavideo_cuda_architectures(9.2 sass ptx)
expect("SASS for nvcc 9.2" "${sass}" "")
# The message an older nvcc gets, as configure prints it.
execute_process(COMMAND ${CMAKE_COMMAND} -DNVCC_VERSION=12.4 -P ${SOURCE_DIR}/cmake/CudaArchitectures.cmake
                OUTPUT_VARIABLE said ERROR_VARIABLE said)
string(FIND "${said}" "nvcc 12.4 does not know sm_100 (needs 12.8), sm_120 (needs 12.8): left out" at)
if(at EQUAL -1)
  message(FATAL_ERROR "no message for the architectures left out: ${said}")
endif()

# 100 bytes 0..99 through the embedding.
file(MAKE_DIRECTORY ${WORK_DIR})
set(hex "")
foreach(i RANGE 0 99)
  math(EXPR byte "${i}" OUTPUT_FORMAT HEXADECIMAL)
  string(SUBSTRING "${byte}" 2 -1 digits)
  string(LENGTH "${digits}" n)
  if(n EQUAL 1)
    set(digits "0${digits}")
  endif()
  string(APPEND hex "${digits}")
endforeach()
# file(WRITE) cannot write arbitrary bytes: printf makes the input.
find_program(PRINTF printf REQUIRED)
string(REGEX REPLACE "(..)" "\\\\x\\1" escaped "${hex}")
execute_process(COMMAND ${PRINTF} "${escaped}" OUTPUT_FILE ${WORK_DIR}/image.bin RESULT_VARIABLE rc)
expect("printf of the test bytes" "${rc}" "0")
execute_process(COMMAND ${CMAKE_COMMAND} -DINPUT=${WORK_DIR}/image.bin -DOUTPUT=${WORK_DIR}/image.cpp
                        -DSYMBOL=rdmavideo::test::kImage -DTOOLKIT=12.4 -DSASS=75,90 -DPTX=75,90
                        -P ${SOURCE_DIR}/cmake/EmbedBinary.cmake RESULT_VARIABLE rc)
expect("EmbedBinary" "${rc}" "0")
file(STRINGS ${WORK_DIR}/image.cpp lines)
set(rows 0)
set(bytes 0)
foreach(line IN LISTS lines)
  string(REGEX MATCHALL "0x[0-9a-f][0-9a-f]," in_line "${line}")
  list(LENGTH in_line n)
  if(n GREATER 0)
    math(EXPR rows "${rows} + 1")
    math(EXPR bytes "${bytes} + ${n}")
    if(n GREATER 32)
      message(FATAL_ERROR "a line of ${n} bytes: ${line}")
    endif()
  endif()
endforeach()
expect("bytes embedded" "${bytes}" "100")
expect("lines of bytes (32, 32, 32, 4)" "${rows}" "4")
file(READ ${WORK_DIR}/image.cpp text)
foreach(want "0x00,0x01,0x02," "0x63," "namespace rdmavideo::test {"
             "EmbeddedImage kImage{kBytes, 100, \"12.4\", \"75,90\", \"75,90\"};")
  string(FIND "${text}" "${want}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "image.cpp lacks ${want}")
  endif()
endforeach()
# Without the toolkit there is no fat binary: the image is there, and empty.
execute_process(COMMAND ${CMAKE_COMMAND} -DOUTPUT=${WORK_DIR}/empty.cpp -DSYMBOL=rdmavideo::test::kNone
                        -P ${SOURCE_DIR}/cmake/EmbedBinary.cmake RESULT_VARIABLE rc)
expect("EmbedBinary without INPUT" "${rc}" "0")
file(READ ${WORK_DIR}/empty.cpp text)
string(FIND "${text}" "EmbeddedImage kNone{kBytes, 0, \"\", \"\", \"\"};" at)
if(at EQUAL -1)
  message(FATAL_ERROR "empty.cpp is not an empty image: ${text}")
endif()
