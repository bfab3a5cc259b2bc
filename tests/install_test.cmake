# Installs mtf from the build tree into a scratch prefix, then configures,
# builds and runs tests/install_consumer against it with find_package(mtf).
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

if(PYTHON)
  set(site "${WORK_DIR}/prefix/${PYTHON_INSTALL_DIR}")
  run(${CMAKE_COMMAND} -E env "PYTHONPATH=${site}" ${PYTHON}
      "${SOURCE_DIR}/tests/install_check.py")
endif()
