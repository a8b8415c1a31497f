# Turns a text file into a C++ header holding it as one raw string literal, so that files
# such as the HTML report's script and style sheet stay readable (and lintable) sources of
# their own and the binary still needs nothing beside it at run time.
#
#   cmake -DINPUT=<file> -DOUTPUT=<header> -DNAME=<identifier> -P embed_text.cmake
#
# The header declares `inline constexpr std::string_view NAME` in namespace cpupower::embed.
foreach(var INPUT OUTPUT NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "embed_text.cmake: -D${var}=... is required")
  endif()
endforeach()
file(READ "${INPUT}" content)
set(delimiter "cpupower_embed")
string(FIND "${content}" ")${delimiter}\"" clash)
if(NOT clash EQUAL -1)
  message(FATAL_ERROR "embed_text.cmake: ${INPUT} contains the raw string delimiter )${delimiter}\"")
endif()
file(WRITE "${OUTPUT}.tmp"
     "// Generated from ${NAME}'s source by cmake/embed_text.cmake; do not edit.\n"
     "#pragma once\n#include <string_view>\n"
     "namespace cpupower::embed {\n"
     "inline constexpr std::string_view ${NAME} = R\"${delimiter}(${content})${delimiter}\";\n"
     "}  // namespace cpupower::embed\n")
# Only a changed header is rewritten, so that an unchanged one rebuilds nothing.
execute_process(COMMAND ${CMAKE_COMMAND} -E copy_if_different "${OUTPUT}.tmp" "${OUTPUT}")
file(REMOVE "${OUTPUT}.tmp")
