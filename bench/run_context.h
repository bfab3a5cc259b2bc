// run_context.h — what every benchmark says about the run it measured: mtf's
// build (Debian's libbenchmark prints "Library was built as DEBUG" about
// itself; mtf is a Release build), the CPU's vector features and the
// OpenBLAS core and threads, so that figures from different machines are
// never compared blind.
#pragma once

#include <benchmark/benchmark.h>
#include <cblas.h>

#include <string>

#include "kernels/blas_core.h"

namespace mtf::bench {

inline std::string cpu_features() {
  std::string s;
  auto add = [&](bool has, const char* name) {
    if (has) s += (s.empty() ? "" : " ") + std::string(name);
  };
  __builtin_cpu_init();
  add(__builtin_cpu_supports("avx2"), "avx2");
  add(__builtin_cpu_supports("fma"), "fma");
  add(__builtin_cpu_supports("avx512f"), "avx512f");
  add(__builtin_cpu_supports("avx512bf16"), "avx512_bf16");
  return s.empty() ? "(none of avx2, fma, avx512f)" : s;
}

inline std::string mtf_build() {
#ifdef NDEBUG
  return "Release (assertions off); libbenchmark's DEBUG warning is about Debian's library";
#else
  return "NOT a Release build: figures are not comparable";
#endif
}

// Adds the context lines to Google Benchmark's header; call before
// benchmark::Initialize.
// The BLAS core is the one mtf runs on (check_blas_core switches OpenBLAS
// off a generic core first, as the first Session would).
inline void add_run_context() {
  kernels::check_blas_core();
  benchmark::AddCustomContext("mtf_build", mtf_build());
  benchmark::AddCustomContext("cpu_features", cpu_features());
  benchmark::AddCustomContext("openblas_core", std::string(openblas_get_corename()) + ", " +
                                                   std::to_string(openblas_get_num_threads()) +
                                                   " threads");
}

}  // namespace mtf::bench
