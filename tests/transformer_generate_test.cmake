# The Transformer LM example trained briefly into a checkpoint directory (on
# a batch-split mesh, sampling greedily at the end), then only generating
# from that checkpoint (--generate true): greedy decoding gives the training
# run's sample on one core, on a model-parallel mesh of 4 and on 2 processes
# (mtf-launch, rank 0's lines; and mpirun when built with MPI), all in
# reproducible mode;
# beam search gives the same text on one core and on 2 processes. Bad
# generation flags are clear errors.
# Arguments: -DLM=<transformer_lm> -DLAUNCH=<mtf-launch> -DWORK_DIR=<scratch>
#            [-DMPIRUN=<mpirun>: also 2 processes over MPI]
file(REMOVE_RECURSE "${WORK_DIR}")
set(model --d_model 64 --d_ff 128 --heads 4 --d_kv 16 --length 32 --batch 8)
function(run out)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${o}\n${e}")
  endif()
  string(REPLACE ";" "<semicolon>" o "${o}")  # generated text may hold any byte
  set(${out} "${o}" PARENT_SCOPE)
endfunction()
# The text between "sample:" and the "generated ..." line (of rank 0 when
# the output has "[r] " prefixes).
function(sample_of out text)
  foreach(mark "\\[0\\] " "\\[1,0\\]<stdout>:")  # mtf-launch's, mpirun --tag-output's
    if(text MATCHES "(^|\n)${mark}")
      string(REGEX MATCHALL "${mark}[^\n]*" lines "${text}")
      list(TRANSFORM lines REPLACE "^${mark}" "")
      list(JOIN lines "\n" text)
      break()
    endif()
  endforeach()
  if(NOT text MATCHES "sample:\n(.*)\ngenerated ([0-9]+) bytes")
    message(FATAL_ERROR "no sample in:\n${text}")
  endif()
  set(${out} "${CMAKE_MATCH_1}" PARENT_SCOPE)
endfunction()

run(trained ${LM} ${model} --steps 30 --eval_every 30 --eval_batches 1 --prompt "The "
    --sample_bytes 50 --temperature 0 --checkpoint_dir ${WORK_DIR}/ckpt
    --mesh_shape batch:2 --layout batch:batch)
sample_of(after_training "${trained}")
set(generate ${LM} --generate true --checkpoint_dir ${WORK_DIR}/ckpt --reproducible true
    --prompt "The " --sample_bytes 50)
run(one ${generate} --temperature 0)
sample_of(want "${one}")
string(LENGTH "${want}" n)
if(NOT n EQUAL 54)
  message(FATAL_ERROR "expected the prompt and 50 bytes, got ${n} bytes: ${want}")
endif()
# The checkpoint holds the trained weights: the training run's own sample.
if(NOT after_training STREQUAL want)
  message(FATAL_ERROR "generated from the checkpoint\n${want}\nafter training\n${after_training}")
endif()
run(mesh ${generate} --temperature 0 --mesh_shape model:4 --layout "heads:model,d_ff:model,vocab:model")
sample_of(got "${mesh}")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "the 4-core mesh generated\n${got}\ninstead of one core's\n${want}")
endif()
run(multi ${LAUNCH} -n 2 -- ${generate} --temperature 0 --mesh_shape model:2 --layout "heads:model,vocab:model")
sample_of(got "${multi}")
if(NOT got STREQUAL want)
  message(FATAL_ERROR "2 processes generated\n${got}\ninstead of one core's\n${want}")
endif()
if(MPIRUN)
  # As root, in containers without ptrace rights for single-copy transfers.
  set(ENV{OMPI_MCA_btl_vader_single_copy_mechanism} none)
  run(mpi ${MPIRUN} --allow-run-as-root --oversubscribe --bind-to none -np 2 --tag-output
      ${generate} --temperature 0 --mesh_shape model:2 --layout "heads:model,vocab:model")
  sample_of(got "${mpi}")
  if(NOT got STREQUAL want)
    message(FATAL_ERROR "2 processes over MPI generated\n${got}\ninstead of one core's\n${want}")
  endif()
endif()
run(beam_one ${generate} --beams 4 --sample_bytes 20)
sample_of(beam_want "${beam_one}")
run(beam_multi ${LAUNCH} -n 2 -- ${generate} --beams 4 --sample_bytes 20 --mesh_shape batch:2 --layout batch:batch)
sample_of(beam_got "${beam_multi}")
if(NOT beam_got STREQUAL beam_want)
  message(FATAL_ERROR "beam search on 2 processes gave\n${beam_got}\ninstead of\n${beam_want}")
endif()
# Bad input: clear errors, non-zero exits.
foreach(bad "--prompt;0123456789012345678901234567890123456789|more than the model's length 32"
            "--temperature;-1|temperature must be >= 0"
            "--top_p;0|top_p must be in"
            "--beams;0|--beams must be >= 1"
            "--stop_byte;256|stop token 256")
  string(REPLACE "|" ";" bad "${bad}")
  list(GET bad -1 says)
  list(REMOVE_AT bad -1)
  execute_process(COMMAND ${generate} ${bad} RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
  if(rc EQUAL 0 OR NOT "${o}${e}" MATCHES "${says}")
    message(FATAL_ERROR "${bad}: expected an error saying \"${says}\", got (${rc}):\n${o}${e}")
  endif()
endforeach()
execute_process(COMMAND ${LM} --generate true --checkpoint_dir ${WORK_DIR}/none
                RESULT_VARIABLE rc OUTPUT_VARIABLE o ERROR_VARIABLE e)
if(rc EQUAL 0 OR NOT "${o}${e}" MATCHES "holds no checkpoint: train into it first")
  message(FATAL_ERROR "an empty --checkpoint_dir: ${o}${e}")
endif()
message(STATUS "PASS: the same text from one core, 4 cores and 2 processes:\n${want}")
