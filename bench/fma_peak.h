// fma_peak.h — this core's float32 multiply-add peak, measured: twelve
// independent chains of vector FMAs (enough to cover the FMA latency on
// every pipe), AVX-512 where the CPU has it, else AVX2. A matrix product
// cannot run faster than this on one core, so benchmarks print it to show
// how far a GEMM-bound step is from the machine's bound.
#pragma once

#include <immintrin.h>

#include <chrono>

namespace mtf::bench {

namespace detail {

#define MTF_FMA_PEAK_LOOP(VEC, SET1, FMA)                                                      \
  VEC a0 = SET1(1.0f), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0, a8 = a0, \
      a9 = a0, a10 = a0, a11 = a0;                                                             \
  const VEC m = SET1(0.999999f), c = SET1(1e-7f);                                              \
  for (long k = 0; k < iterations; ++k) {                                                      \
    a0 = FMA(a0, m, c), a1 = FMA(a1, m, c), a2 = FMA(a2, m, c), a3 = FMA(a3, m, c);            \
    a4 = FMA(a4, m, c), a5 = FMA(a5, m, c), a6 = FMA(a6, m, c), a7 = FMA(a7, m, c);            \
    a8 = FMA(a8, m, c), a9 = FMA(a9, m, c), a10 = FMA(a10, m, c), a11 = FMA(a11, m, c);        \
    __asm__ volatile(""                                                                        \
                     : "+v"(a0), "+v"(a1), "+v"(a2), "+v"(a3), "+v"(a4), "+v"(a5), "+v"(a6),   \
                       "+v"(a7), "+v"(a8), "+v"(a9), "+v"(a10), "+v"(a11));                    \
  }

// Each returns the flops done: 12 chains x lanes x 2 per iteration.
__attribute__((target("avx512f"))) inline double fma_avx512(long iterations) {
  MTF_FMA_PEAK_LOOP(__m512, _mm512_set1_ps, _mm512_fmadd_ps)
  return 12.0 * 16 * 2 * static_cast<double>(iterations);
}
__attribute__((target("avx2,fma"))) inline double fma_avx2(long iterations) {
  MTF_FMA_PEAK_LOOP(__m256, _mm256_set1_ps, _mm256_fmadd_ps)
  return 12.0 * 8 * 2 * static_cast<double>(iterations);
}
#undef MTF_FMA_PEAK_LOOP

}  // namespace detail

// GFLOP/s of one core at float32 FMAs: the best of five short runs.
// Returns 0 on a CPU without AVX2 and FMA.
inline double fma_peak_gflops() {
  __builtin_cpu_init();
  const bool avx512 = __builtin_cpu_supports("avx512f");
  if (!avx512 && !(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return 0;
  double best = 0;
  for (int run = 0; run < 5; ++run) {
    const auto t0 = std::chrono::steady_clock::now();
    const double flops = avx512 ? detail::fma_avx512(5'000'000) : detail::fma_avx2(5'000'000);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > 0 && flops / s / 1e9 > best) best = flops / s / 1e9;
  }
  return best;
}

}  // namespace mtf::bench
