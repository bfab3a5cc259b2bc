# Layouts do not change results: the MNIST example's printed loss trajectory
# (every step, all 17 digits) and its test accuracy on a mesh equal the
# one-processor run's, bit for bit (the example runs --reproducible true by
# default).
# Arguments: -DPROGRAM=<mnist> -DMESH=<mesh shape> -DLAYOUT=<layout rules>
#            [-DIMPL=simd|placement] [-DARGS=<more flags>]
if(NOT DEFINED IMPL)
  set(IMPL simd)
endif()
set(common ${ARGS} --eval_every 1 --loss_digits 17)
execute_process(COMMAND ${PROGRAM} ${common} OUTPUT_VARIABLE one RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the one-processor run failed: ${one}")
endif()
execute_process(COMMAND ${PROGRAM} ${common} --mesh_shape ${MESH} --layout ${LAYOUT}
                        --mesh_impl ${IMPL}
  OUTPUT_VARIABLE mesh ERROR_VARIABLE mesh_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the mesh run failed (${rc}):\n${mesh}\n${mesh_err}")
endif()
set(line_re "step [0-9]+ loss [0-9.e+-]+|test accuracy: [0-9.]+")
string(REGEX MATCHALL "${line_re}" want "${one}")
string(REGEX MATCHALL "${line_re}" got "${mesh}")
list(LENGTH want n)
list(LENGTH got m)
if(n LESS 100 OR NOT n EQUAL m)
  message(FATAL_ERROR "expected the same number (>= 100) of loss lines: ${n} vs ${m}\n${mesh}")
endif()
math(EXPR last "${n} - 1")
foreach(i RANGE ${last})
  list(GET want ${i} a)
  list(GET got ${i} b)
  if(NOT "${a}" STREQUAL "${b}")
    message(FATAL_ERROR "${MESH} \"${LAYOUT}\" ${IMPL} differs from one processor:\n  one processor: ${a}\n  mesh:          ${b}")
  endif()
endforeach()
list(GET want ${last} acc)
message(STATUS "identical to one processor at all ${n} lines, ending with ${acc}")
