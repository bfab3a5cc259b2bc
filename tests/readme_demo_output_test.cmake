# The README's simulation demo, as printed (the ```sh block of its
# "Simulating a pod" section, with the build tree in place of build/), must
# print every line of the output block shown after it, exactly: a cost-only
# simulation is deterministic, so a change that moves a figure fails here
# until the README shows what the demo prints. The block's "..." line stands
# for lines left out.
# Arguments: -DSOURCE_DIR=... -DBUILD_DIR=...
include(${CMAKE_CURRENT_LIST_DIR}/readme_section.cmake)
readme_section(section "Simulating a pod")
if(NOT section MATCHES "```sh\n([^`]*)```\n\n```\n([^`]*)```")
  message(FATAL_ERROR "the README's \"Simulating a pod\" section lacks a ```sh block followed by "
                      "its output block")
endif()
set(command "${CMAKE_MATCH_1}")
set(shown "${CMAKE_MATCH_2}")
string(REPLACE "\\\n" " " command "${command}")
string(STRIP "${command}" command)
string(REGEX REPLACE "(^| )build/" "\\1${BUILD_DIR}/" run "${command}")
execute_process(COMMAND bash -c "${run}" WORKING_DIRECTORY "${SOURCE_DIR}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the README's demo failed (${rc}):\n${command}\n${out}\n${err}")
endif()
string(REPLACE ";" "<semicolon>" shown "${shown}")
string(REPLACE "\n" ";" lines "${shown}")
set(checked 0)
foreach(line IN LISTS lines)
  string(REPLACE "<semicolon>" ";" line "${line}")
  if(line STREQUAL "" OR line MATCHES "^ *\\.\\.\\.$")
    continue()
  endif()
  string(FIND "${out}" "${line}\n" found)
  if(found LESS 0)
    message(FATAL_ERROR "the README shows a line the demo does not print:\n  ${line}\n"
                        "the demo printed:\n${out}\nUpdate README.md (and say why the figure moved).")
  endif()
  math(EXPR checked "${checked} + 1")
endforeach()
if(checked LESS 3)
  message(FATAL_ERROR "the README's demo output block has only ${checked} lines to check")
endif()
message(STATUS "all ${checked} lines the README shows were printed")
