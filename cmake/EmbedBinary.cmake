# SPDX-License-Identifier: Apache-2.0
# Writes INPUT's bytes as a C++ array, with what built them:
#   cmake -DINPUT=f -DOUTPUT=f.cpp -DHEADER=h -DTOOLKIT=13.0 -DSASS=75,80 -DPTX=75,120 -P this
# The array is rdmavideo::cuda::detail::kKernelImage, as HEADER declares it, beside
# kKernelToolkit ("13.0"), kKernelSass and kKernelPtx (the architectures, "75,80,...").
file(READ "${INPUT}" hex HEX)
string(LENGTH "${hex}" length)
math(EXPR bytes "${length} / 2")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," array "${hex}")
# Lines of 32 bytes keep the file readable by tools. CMake's regular expressions have no {n}
# quantifier, so the 32 are spelled out.
string(REPEAT "0x[0-9a-f][0-9a-f]," 32 line)
string(REGEX REPLACE "(${line})" "\\1\n" array "${array}")
file(WRITE "${OUTPUT}.tmp"
  "// Generated from ${INPUT} by cmake/EmbedBinary.cmake. Do not edit.\n"
  "#include \"${HEADER}\"\n\n"
  "namespace rdmavideo::cuda::detail {\n\n"
  "alignas(16) const unsigned char kKernelImage[] = {\n${array}\n};\n"
  "const size_t kKernelImageBytes = ${bytes};\n"
  "const char* const kKernelToolkit = \"${TOOLKIT}\";\n"
  "const char* const kKernelSass = \"${SASS}\";\n"
  "const char* const kKernelPtx = \"${PTX}\";\n\n"
  "}  // namespace rdmavideo::cuda::detail\n")
file(RENAME "${OUTPUT}.tmp" "${OUTPUT}")
