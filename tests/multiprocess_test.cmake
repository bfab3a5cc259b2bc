# The Fashion-MNIST MLP trained by N processes over TCP (mtf-launch) prints
# the same losses, to the last bit (17 digits), and the same test accuracy,
# as the in-process SIMD run of the same mesh and layout.
# Arguments: -DLAUNCH=<mtf-launch> -DMNIST=<mnist> -DN=<processes>
#            -DMESH=<mesh shape> -DLAYOUT=<layout rules>
set(args --steps 30 --eval_every 5 --batch_size 40 --hidden 64 --loss_digits 17
  --mesh_shape ${MESH} --layout ${LAYOUT})
execute_process(COMMAND ${MNIST} ${args} OUTPUT_VARIABLE single RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the in-process run failed: ${single}")
endif()
execute_process(COMMAND ${LAUNCH} -n ${N} -- ${MNIST} ${args}
  OUTPUT_VARIABLE multi ERROR_VARIABLE multi_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the ${N}-process run failed (${rc}):\n${multi}\n${multi_err}")
endif()
string(REGEX MATCHALL "step [0-9]+ loss [0-9.e+-]+|test accuracy: [0-9.]+" want "${single}")
foreach(rank RANGE 0 ${N})
  if(rank EQUAL N)
    break()
  endif()
  string(REGEX MATCHALL "\\[${rank}\\] (step [0-9]+ loss [0-9.e+-]+|test accuracy: [0-9.]+)" lines "${multi}")
  set(got "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^\\[[0-9]+\\] " "" line "${line}")
    list(APPEND got "${line}")
  endforeach()
  if(NOT "${want}" STREQUAL "${got}")
    message(FATAL_ERROR "rank ${rank} differs from the in-process run:\nin-process: ${want}\nrank ${rank}:     ${got}")
  endif()
endforeach()
list(LENGTH want n)
if(n LESS 7)
  message(FATAL_ERROR "too few loss lines: ${single}")
endif()
message(STATUS "bit-identical on ${N} processes: ${want}")
