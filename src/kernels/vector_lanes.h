// vector_lanes.h — 16 float32 lanes loaded from float32 or bfloat16 memory
// (bfloat16 widens exactly), for kernels that read either dtype as it is.
// AVX-512 only: callers compile these into functions with MTF_LANES_TARGET
// and call them after has_avx512_lanes(). Internal to src/kernels.
#pragma once

#if defined(__x86_64__)
#include <immintrin.h>

#include <cstdint>

// GCC 12's convert and shift intrinsics pass _mm512_undefined_epi32() as
// their (unused) merge source, which -Wmaybe-uninitialized mistakes for a
// read of an uninitialized value (GCC bug 105593); for the including file.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#define MTF_LANES_TARGET __attribute__((target("avx512f,avx512bw,avx512vl")))

namespace mtf::kernels {

// True where the CPU runs MTF_LANES_TARGET code.
inline bool has_avx512_lanes() {
  static const bool ok = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                         __builtin_cpu_supports("avx512vl");
  return ok;
}

MTF_LANES_TARGET inline __m512 lanes(const float* p) { return _mm512_loadu_ps(p); }
MTF_LANES_TARGET inline __m512 lanes(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// The first lanes of `m` (the others 0).
MTF_LANES_TARGET inline __m512 lanes_first(const float* p, __mmask16 m) {
  return _mm512_maskz_loadu_ps(m, p);
}
MTF_LANES_TARGET inline __m512 lanes_first(const uint16_t* p, __mmask16 m) {
  const __m256i h = _mm256_maskz_loadu_epi16(m, p);
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}
// The mask of the first n < 16 lanes.
inline __mmask16 first_lanes(int64_t n) { return static_cast<__mmask16>((1u << n) - 1); }

}  // namespace mtf::kernels
#endif
