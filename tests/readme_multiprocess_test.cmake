# The README's multi-process commands, as printed (the first ```sh block of
# its "Multi-process runs" section), run from the source tree with the build
# tree in place of build/ and a short run appended (--steps 20): each must
# succeed and print rank 0's test accuracy; the mtf-launch line prints only
# rank 0's lines. The mpirun line runs when this build has MPI.
# Arguments: -DSOURCE_DIR=... -DBUILD_DIR=... -DHAVE_MPI=ON|OFF
include(${CMAKE_CURRENT_LIST_DIR}/readme_section.cmake)
readme_section(section "Multi-process runs")
if(NOT section MATCHES "```sh\n([^`]*)```")
  message(FATAL_ERROR "no ```sh block in the README's multi-process section")
endif()
string(REPLACE "\\\n" " " block "${CMAKE_MATCH_1}")
string(REPLACE ";" "<semicolon>" block "${block}")  # the layouts' separators
string(REPLACE "\n" ";" commands "${block}")
set(ran 0)
foreach(command IN LISTS commands)
  string(REPLACE "<semicolon>" ";" command "${command}")
  string(STRIP "${command}" command)
  if(command STREQUAL "" OR command MATCHES "^#")
    continue()
  endif()
  if(command MATCHES "^mpirun" AND NOT HAVE_MPI)
    message(STATUS "skipped (no MPI in this build): ${command}")
    continue()
  endif()
  string(REGEX REPLACE "(^| )build/" "\\1${BUILD_DIR}/" run "${command}")
  execute_process(COMMAND bash -c "${run} --steps 20 --eval_every 10"
    WORKING_DIRECTORY "${SOURCE_DIR}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "test accuracy")
    message(FATAL_ERROR "the README's command failed (${rc}):\n${command}\n${out}\n${err}")
  endif()
  if(command MATCHES "mtf-launch" AND out MATCHES "(^|\n)\\[[0-9]+\\] ")
    message(FATAL_ERROR "mtf-launch printed prefixed lines without --output all:\n${out}")
  endif()
  math(EXPR ran "${ran} + 1")
  message(STATUS "ran as printed: ${command}")
endforeach()
if(ran EQUAL 0)
  message(FATAL_ERROR "no command of the README's multi-process section ran")
endif()
message(STATUS "PASS: ${ran} README multi-process command(s) work as printed")
