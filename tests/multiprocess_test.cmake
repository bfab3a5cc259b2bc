# The Fashion-MNIST MLP trained by N processes over TCP (mtf-launch) prints
# the same losses, to the last bit (17 digits), and the same test accuracy,
# as the in-process SIMD run of the same mesh and layout.
# Arguments: -DLAUNCH=<mtf-launch, or mpirun> -DMNIST=<mnist> -DN=<processes>
#            -DMESH=<mesh shape> -DLAYOUT=<layout rules>
set(args --steps 30 --eval_every 5 --batch_size 40 --hidden 64 --loss_digits 17
  --mesh_shape ${MESH} --layout ${LAYOUT})
execute_process(COMMAND ${MNIST} ${args} OUTPUT_VARIABLE single RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the in-process run failed: ${single}")
endif()
if(LAUNCH MATCHES "mpirun$")
  # As root, in containers without ptrace rights for single-copy transfers.
  set(ENV{OMPI_MCA_btl_vader_single_copy_mechanism} none)
  # Unbound, so OpenBLAS threads as in the in-process run (its results
  # depend on how many threads split a product).
  set(launch ${LAUNCH} --allow-run-as-root --oversubscribe --bind-to none -np ${N} --tag-output)
  set(prefix "\\[1,([0-9]+)\\]<stdout>:")
else()
  set(launch ${LAUNCH} -n ${N} --)
endif()
execute_process(COMMAND ${launch} ${MNIST} ${args}
  OUTPUT_VARIABLE multi ERROR_VARIABLE multi_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the ${N}-process run failed (${rc}):\n${multi}\n${multi_err}")
endif()
string(REGEX MATCHALL "step [0-9]+ loss [0-9.e+-]+|test accuracy: [0-9.]+" want "${single}")
foreach(rank RANGE 0 ${N})
  if(rank EQUAL N)
    break()
  endif()
  if(LAUNCH MATCHES "mpirun$")
    set(mark "\\[1,${rank}\\]<stdout>:")
  else()
    set(mark "\\[${rank}\\] ")
  endif()
  string(REGEX MATCHALL "${mark}(step [0-9]+ loss [0-9.e+-]+|test accuracy: [0-9.]+)" lines "${multi}")
  set(got "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^${mark}" "" line "${line}")
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
