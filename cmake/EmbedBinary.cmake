# SPDX-License-Identifier: Apache-2.0
# Writes INPUT's bytes as a C++ array: cmake -DINPUT=f -DOUTPUT=f.cpp -DHEADER=h -P this.
# The array is rdmavideo::cuda::detail::kKernelImage, as HEADER declares it.
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," array "${hex}")
# Lines of 32 bytes keep the file readable by tools.
string(REGEX REPLACE "((0x[0-9a-f][0-9a-f],){32})" "\\1\n" array "${array}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedBinary.cmake. Do not edit.\n"
  "#include \"${HEADER}\"\n\n"
  "namespace rdmavideo::cuda::detail {\n\n"
  "alignas(16) const unsigned char kKernelImage[] = {\n${array}\n};\n"
  "const size_t kKernelImageBytes = ${bytes};\n\n"
  "}  // namespace rdmavideo::cuda::detail\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
