# Small helpers shared by every target.

# Warnings, optimisation flags and sanitizers for one target.
function(mtf_set_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  if(MTF_NATIVE)
    target_compile_options(${target} PRIVATE -march=native)
  endif()
  if(MTF_SANITIZE)
    target_compile_options(${target} PRIVATE -fsanitize=${MTF_SANITIZE} -fno-omit-frame-pointer)
    target_link_options(${target} PRIVATE -fsanitize=${MTF_SANITIZE})
  endif()
endfunction()

# mtf_test(NAME sources... [LABELS l...] [SERIAL]): a GoogleTest executable registered with
# CTest; SERIAL runs its tests alone (for checks of wall time).
function(mtf_test name)
  cmake_parse_arguments(T "SERIAL" "" "LABELS" ${ARGN})
  add_executable(${name} ${T_UNPARSED_ARGUMENTS})
  target_link_libraries(${name} PRIVATE mtf mtf_data GTest::gtest GTest::gtest_main)
  target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR}/src)
  mtf_set_warnings(${name})
  set(props "")
  if(T_LABELS)
    list(APPEND props LABELS "${T_LABELS}")
  endif()
  if(T_SERIAL)
    list(APPEND props RUN_SERIAL TRUE)
  endif()
  if(MTF_SANITIZE)
    # Tests of huge allocations expect an OutOfMemoryError, not an ASan abort.
    list(APPEND props ENVIRONMENT
         "ASAN_OPTIONS=allocator_may_return_null=1;UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1")
  endif()
  if(props)
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES ${props})
  else()
    gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60)
  endif()
endfunction()
