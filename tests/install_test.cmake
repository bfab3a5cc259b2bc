# Installs mtf from the build tree into a scratch prefix, then configures,
# builds and runs tests/install_consumer against it with find_package(mtf);
# builds the same program by hand with pkg-config's flags (mtf.pc); and runs
# the installed bin/mtf-launch, bin/mtf-sim and bin/mtf-bleu.
# With -DCXX=<compiler> -DPKG_CONFIG=<pkg-config>.
# With -DPYTHON=<interpreter> -DPYTHON_INSTALL_DIR=<dir under the prefix>,
# also imports the installed Python package (and only it: PYTHONPATH names
# the prefix, not the build tree) and runs a small graph through it.
# Invoked by CTest with -DBUILD_DIR=... -DSOURCE_DIR=... -DWORK_DIR=...
file(REMOVE_RECURSE "${WORK_DIR}")
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}\n${out}\n${err}")
  endif()
  message(STATUS "${out}")
endfunction()
run(${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${WORK_DIR}/prefix")
run(${CMAKE_COMMAND} -S "${SOURCE_DIR}/tests/install_consumer" -B "${WORK_DIR}/build"
    -DCMAKE_PREFIX_PATH=${WORK_DIR}/prefix -DCMAKE_BUILD_TYPE=Release)
run(${CMAKE_COMMAND} --build "${WORK_DIR}/build")
run("${WORK_DIR}/build/consumer")

# pkg-config: flags from the installed mtf.pc alone.
set(ENV{PKG_CONFIG_PATH} "")
file(GLOB_RECURSE pc_files "${WORK_DIR}/prefix/*/mtf.pc")
list(LENGTH pc_files n_pc)
if(NOT n_pc EQUAL 1)
  message(FATAL_ERROR "expected one installed mtf.pc, found: ${pc_files}")
endif()
get_filename_component(pc_dir "${pc_files}" DIRECTORY)
set(ENV{PKG_CONFIG_PATH} "${pc_dir}")
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs mtf OUTPUT_VARIABLE pc_flags
  RESULT_VARIABLE rc OUTPUT_STRIP_TRAILING_WHITESPACE)
execute_process(COMMAND ${PKG_CONFIG} --variable=libdir mtf OUTPUT_VARIABLE pc_libdir
  OUTPUT_STRIP_TRAILING_WHITESPACE)
if(NOT rc EQUAL 0 OR NOT pc_flags MATCHES "-lmtf")
  message(FATAL_ERROR "pkg-config --cflags --libs mtf failed (${rc}): ${pc_flags}")
endif()
separate_arguments(pc_flags UNIX_COMMAND "${pc_flags}")
run(${CXX} -std=c++17 "${SOURCE_DIR}/tests/install_consumer/main.cc" ${pc_flags}
    "-Wl,-rpath,${pc_libdir}" -o "${WORK_DIR}/pkg_config_consumer")
run("${WORK_DIR}/pkg_config_consumer")

# The installed launcher: rank 0's line only by default, every rank's with
# --output all.
set(launch "${WORK_DIR}/prefix/bin/mtf-launch")
execute_process(COMMAND ${launch} -n 2 -- /bin/sh -c "echo rank $MTF_RANK of $MTF_WORLD_SIZE"
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out STREQUAL "rank 0 of 2\n")
  message(FATAL_ERROR "installed mtf-launch -n 2 printed (${rc}): \"${out}\"")
endif()
execute_process(COMMAND ${launch} -n 2 --output all -- /bin/sh -c "echo rank $MTF_RANK"
  OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\\[0\\] rank 0" OR NOT out MATCHES "\\[1\\] rank 1")
  message(FATAL_ERROR "installed mtf-launch --output all printed (${rc}): \"${out}\"")
endif()
# The installed simulator (finding the installed libmtf).
execute_process(COMMAND "${WORK_DIR}/prefix/bin/mtf-sim" --model mlp --mesh_shape all:8
  --topology tpu-v2-8 OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "step")
  message(FATAL_ERROR "installed mtf-sim failed (${rc}): ${out}\n${err}")
endif()
# The installed BLEU scorer.
file(WRITE "${WORK_DIR}/hyp.txt" "the cat sat on the mat .\n")
execute_process(COMMAND "${WORK_DIR}/prefix/bin/mtf-bleu" --hypotheses "${WORK_DIR}/hyp.txt"
  --references "${WORK_DIR}/hyp.txt" OUTPUT_VARIABLE out ERROR_VARIABLE err RESULT_VARIABLE rc)
if(NOT rc EQUAL 0 OR NOT out MATCHES "BLEU = 100.00")
  message(FATAL_ERROR "installed mtf-bleu failed (${rc}): ${out}\n${err}")
endif()
message(STATUS "installed mtf-launch, mtf-sim, mtf-bleu and mtf.pc work")

if(PYTHON)
  set(site "${WORK_DIR}/prefix/${PYTHON_INSTALL_DIR}")
  run(${CMAKE_COMMAND} -E env "PYTHONPATH=${site}" ${PYTHON}
      "${SOURCE_DIR}/tests/install_check.py")
endif()
