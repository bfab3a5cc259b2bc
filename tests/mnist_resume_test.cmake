# A run stopped at step 20 and resumed to 40 prints the same loss trajectory
# as a run of 40 steps without a stop, and so does a rerun of the
# uninterrupted run's directory from its step 20 (--restore_step), which
# replaces the later checkpoint. Arguments: -DMNIST=<binary> -DWORK=<dir>
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(common --steps 40 --eval_every 5 --save_every 20 --batch_size 50 --hidden 128)
# Runs mnist with ARGN into <out> (stdout) and <err> (stderr); fails the
# test, saying `what`, unless it exits 0.
function(run_mnist out err what)
  execute_process(COMMAND ${MNIST} ${ARGN} OUTPUT_VARIABLE o ERROR_VARIABLE e RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what} failed (${rc}):\n${o}\n${e}")
  endif()
  set(${out} "${o}" PARENT_SCOPE)
  set(${err} "${e}" PARENT_SCOPE)
endfunction()

run_mnist(straight _ "uninterrupted run" ${common} --checkpoint_dir ${WORK}/straight)
run_mnist(first _ "first half" --steps 20 --eval_every 5 --save_every 20 --batch_size 50
  --hidden 128 --checkpoint_dir ${WORK}/resumed)
run_mnist(second _ "resumed run" ${common} --checkpoint_dir ${WORK}/resumed)
if(NOT second MATCHES "resumed from .*ckpt-20.h5 at step 20")
  message(FATAL_ERROR "the second run did not resume from step 20:\n${second}")
endif()
string(REGEX MATCHALL "step [0-9]+ loss [0-9.]+" want "${straight}")
string(REGEX MATCHALL "step [0-9]+ loss [0-9.]+" got_first "${first}")
string(REGEX MATCHALL "step [0-9]+ loss [0-9.]+" got_second "${second}")
set(got ${got_first} ${got_second})
list(LENGTH want n)
if(NOT n EQUAL 9)
  message(FATAL_ERROR "expected 9 loss lines, got ${n}:\n${straight}")
endif()
if(NOT "${want}" STREQUAL "${got}")
  message(FATAL_ERROR "trajectories differ:\nuninterrupted: ${want}\nresumed:       ${got}")
endif()
message(STATUS "same trajectory: ${got}")

# --restore_step: back to step 20 of the uninterrupted run's directory; the
# steps after it are run again, to the same losses.
execute_process(COMMAND ${MNIST} ${common} --checkpoint_dir ${WORK}/straight --restore_step 30
  OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(rc EQUAL 0 OR NOT err MATCHES "has no checkpoint of step 30 \\(its steps: 20, 40\\)")
  message(FATAL_ERROR "--restore_step 30 (no such checkpoint) was not refused clearly (${rc}):\n${err}")
endif()
run_mnist(again err "--restore_step 20" ${common} --checkpoint_dir ${WORK}/straight
  --restore_step 20)
if(NOT again MATCHES "resumed from .*ckpt-20.h5 at step 20")
  message(FATAL_ERROR "--restore_step 20 did not resume from step 20:\n${again}\n${err}")
endif()
if(NOT err MATCHES "first save removes those after step 20")
  message(FATAL_ERROR "--restore_step 20 did not say that ckpt-40 is replaced:\n${err}")
endif()
string(REGEX MATCHALL "step [0-9]+ loss [0-9.]+" got_again "${again}")
if(NOT "${got_again}" STREQUAL "${got_second}")
  message(FATAL_ERROR "rerun from step 20 differs:\nresumed: ${got_second}\nrerun:   ${got_again}")
endif()
message(STATUS "rerun from step 20: ${got_again}")
