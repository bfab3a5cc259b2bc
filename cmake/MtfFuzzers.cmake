# mtf_add_fuzzers(): when clang with libFuzzer is on this machine, builds
# the fuzz targets in a tree of their own (<build>/fuzz, configured with
# MTF_FUZZ=ON, so the library there is instrumented and sanitized) as part
# of the main build, and registers one CTest per target (label fuzz) that
# runs it for MTF_FUZZ_SECONDS over its seed corpus in tests/fuzz/corpus/.
# Without clang's libFuzzer: says so, and registers nothing.
include(ExternalProject)
# The targets, tests/fuzz/fuzz_<name>.cc, each with a corpus/<name>/.
set(MTF_FUZZ_TARGETS checkpoint frames handshake flags layout topology)
option(MTF_BUILD_FUZZERS "Build the libFuzzer targets (needs clang and libclang-rt-dev)" ON)
set(MTF_FUZZ_SECONDS 30 CACHE STRING "Seconds each fuzz target runs in the test suite")

function(mtf_add_fuzzers)
  if(NOT MTF_BUILD_FUZZERS)
    return()
  endif()
  find_program(MTF_CLANG clang)
  find_program(MTF_CLANGXX clang++)
  if(MTF_CLANGXX)
    set(probe ${CMAKE_BINARY_DIR}/fuzz_probe)
    file(WRITE ${probe}.cc
         "#include <cstddef>\n#include <cstdint>\n"
         "extern \"C\" int LLVMFuzzerTestOneInput(const uint8_t*, size_t) { return 0; }\n")
    # The library there needs clang's OpenMP too.
    execute_process(COMMAND ${MTF_CLANGXX} -fsanitize=fuzzer,address,undefined -fopenmp
                            ${probe}.cc -o ${probe} RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET)
  endif()
  if(NOT MTF_CLANGXX OR NOT rc EQUAL 0)
    message(STATUS "Fuzz targets not built: they need clang, its libFuzzer and its OpenMP "
                   "(Debian clang, libclang-rt-dev and libomp-dev; scripts/setup.sh test "
                   "installs them)")
    return()
  endif()
  # Under make, the sub-build shares the main build's jobs.
  if(CMAKE_GENERATOR MATCHES "Make")
    set(build $(MAKE) fuzzers)
  else()
    set(build ${CMAKE_COMMAND} --build <BINARY_DIR> --target fuzzers)
  endif()
  ExternalProject_Add(mtf_fuzzers
    SOURCE_DIR ${PROJECT_SOURCE_DIR}
    BINARY_DIR ${CMAKE_BINARY_DIR}/fuzz
    CMAKE_ARGS -DCMAKE_C_COMPILER=${MTF_CLANG} -DCMAKE_CXX_COMPILER=${MTF_CLANGXX}
               -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
               -DMTF_FUZZ=ON -DMTF_BUILD_TESTS=OFF -DMTF_BUILD_BENCHMARKS=OFF
               -DMTF_BUILD_EXAMPLES=OFF -DMTF_BUILD_PYTHON=OFF -DMTF_WITH_MPI=OFF
               -DMTF_WITH_ONEDNN=OFF -DMTF_NATIVE=${MTF_NATIVE}
    BUILD_COMMAND ${build}
    INSTALL_COMMAND ""
    BUILD_ALWAYS ON)
  set(dir ${PROJECT_SOURCE_DIR}/tests/fuzz)
  foreach(t IN LISTS MTF_FUZZ_TARGETS)
    add_test(NAME fuzz.${t}
      COMMAND ${dir}/run_fuzzer.sh ${CMAKE_BINARY_DIR}/fuzz/tests/fuzz/fuzz_${t}
              ${dir}/corpus/${t} ${MTF_FUZZ_SECONDS} ${CMAKE_BINARY_DIR}/fuzz/runs/${t})
    set_tests_properties(fuzz.${t} PROPERTIES LABELS fuzz TIMEOUT 600
      PASS_REGULAR_EXPRESSION "PASS:" FAIL_REGULAR_EXPRESSION "FAIL:")
  endforeach()
endfunction()
