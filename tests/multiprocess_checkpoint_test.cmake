# A run of 4 processes (rows:2;cols:2) saves checkpoints; a run of 2
# processes with another layout resumes from the latest and goes on.
# Arguments: -DLAUNCH=<mtf-launch> -DMNIST=<mnist> -DWORK=<dir>
file(REMOVE_RECURSE ${WORK})
set(common --eval_every 10 --batch_size 40 --hidden 64 --checkpoint_dir ${WORK} --save_every 10)
execute_process(COMMAND ${LAUNCH} -n 4 --output all -- ${MNIST} --steps 20 ${common}
  --mesh_shape rows:2,cols:2 --layout batch:rows,hidden:cols
  OUTPUT_VARIABLE first ERROR_VARIABLE first_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the 4-process run failed:\n${first}\n${first_err}")
endif()
execute_process(COMMAND ${LAUNCH} -n 2 --output all -- ${MNIST} --steps 30 ${common}
  --mesh_shape all:2 --layout hidden:all
  OUTPUT_VARIABLE second ERROR_VARIABLE second_err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the 2-process run failed:\n${second}\n${second_err}")
endif()
if(NOT second MATCHES "\\[0\\] resumed from [^\n]*ckpt-20.h5 at step 20 \\(saved on mesh \"rows:2;cols:2\"")
  message(FATAL_ERROR "the 2-process run did not resume from the 4-process checkpoint:\n${second}")
endif()
if(NOT second MATCHES "\\[1\\] step 30 loss")
  message(FATAL_ERROR "the resumed run did not train on:\n${second}")
endif()
message(STATUS "resumed on 2 processes from a checkpoint of 4")
