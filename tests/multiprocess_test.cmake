# An example (the Fashion-MNIST MLP, the Transformer LM or the translation
# model) trained by N processes over TCP (mtf-launch) or MPI prints the same
# losses, to the last bit (17 digits), and the same test accuracy, held-out
# or development loss, or test BLEU (greedy and beam search), as the
# in-process SIMD run of the same mesh and layout; with -DINPUT_SHARE=K,
# each rank says it read 1/K of each batch's bytes (sharded input); with
# -DINPUT_BYTES=B, exactly B bytes (when inputs split unevenly, e.g. images
# split by rows while their labels are whole).
# Arguments: -DLAUNCH=<mtf-launch, or mpirun> -DPROGRAM=<example> -DN=<processes>
#            -DMESH=<mesh shape> -DLAYOUT=<layout rules> [-DARGS=<the example's flags>]
#            [-DINPUT_SHARE=<K> | -DINPUT_BYTES=<B>]
if(NOT DEFINED ARGS)
  set(ARGS --steps 30 --eval_every 5 --batch_size 40 --hidden 64)
endif()
set(args ${ARGS} --loss_digits 17 --mesh_shape ${MESH} --layout ${LAYOUT})
execute_process(COMMAND ${PROGRAM} ${args} OUTPUT_VARIABLE single RESULT_VARIABLE rc)
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
  set(launch ${LAUNCH} -n ${N} --output all --)
endif()
execute_process(COMMAND ${launch} ${PROGRAM} ${args}
  OUTPUT_VARIABLE multi ERROR_VARIABLE multi_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the ${N}-process run failed (${rc}):\n${multi}\n${multi_err}")
endif()
set(line_re "step [0-9]+ loss [0-9.e+-]+( (held-out|dev) loss [0-9.e+-]+)?|test accuracy: [0-9.]+|test, [a-z0-9 ]+: BLEU = [0-9.]+")
string(REGEX MATCHALL "${line_re}" want "${single}")
foreach(rank RANGE 0 ${N})
  if(rank EQUAL N)
    break()
  endif()
  if(LAUNCH MATCHES "mpirun$")
    set(mark "\\[1,${rank}\\]<stdout>:")
  else()
    set(mark "\\[${rank}\\] ")
  endif()
  string(REGEX MATCHALL "${mark}(${line_re})" lines "${multi}")
  set(got "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "^${mark}" "" line "${line}")
    list(APPEND got "${line}")
  endforeach()
  if(NOT "${want}" STREQUAL "${got}")
    message(FATAL_ERROR "rank ${rank} differs from the in-process run:\nin-process: ${want}\nrank ${rank}:     ${got}")
  endif()
  # Sharded input: each rank read its share of the batch, no more.
  if(DEFINED INPUT_SHARE OR DEFINED INPUT_BYTES)
    if(NOT multi MATCHES "${mark}input: this process read ([0-9]+) of the batch's ([0-9]+) bytes")
      message(FATAL_ERROR "rank ${rank} did not say how much input it read:\n${multi}")
    endif()
    if(DEFINED INPUT_BYTES)
      set(expected ${INPUT_BYTES})
    else()
      math(EXPR expected "${CMAKE_MATCH_2} / ${INPUT_SHARE}")
    endif()
    if(NOT CMAKE_MATCH_1 EQUAL expected)
      message(FATAL_ERROR "rank ${rank} read ${CMAKE_MATCH_1} bytes per step, not ${expected} of the batch's ${CMAKE_MATCH_2}")
    endif()
  endif()
endforeach()
list(LENGTH want n)
if(n LESS 3)
  message(FATAL_ERROR "too few loss lines: ${single}")
endif()
message(STATUS "bit-identical on ${N} processes: ${want}")
