// philox_lanes.h — Philox4x32-10 on 16 counters a vector (AVX-512), giving
// exactly philox.h's words: random_uniform's values for 64 consecutive
// logical indices a pass (four vectors in flight) instead of one at a time.
// Internal to src/kernels.
#pragma once

#include <cstdint>

#include "kernels/philox.h"
#include "kernels/vector_lanes.h"

namespace mtf::kernels {

#if defined(__x86_64__)
// The high halves of the 32 x 32-bit products a * m, lane by lane.
MTF_LANES_TARGET inline __m512i mulhi_lanes(__m512i a, __m512i m) {
  const __m512i even = _mm512_srli_epi64(_mm512_mul_epu32(a, m), 32);
  const __m512i odd = _mm512_mul_epu32(_mm512_srli_epi64(a, 32), m);
  return _mm512_mask_blend_epi32(0xAAAA, even, odd);
}

// Philox4x32-10's first word for counters {c0 (16 lanes), c1, c2, c3}
// (c1..c3 the same in every lane), key {k0, k1}: kBlocks blocks of 16
// lanes at once, so that one block's multiplies overlap another's latency.
template <int kBlocks>
MTF_LANES_TARGET inline void philox_first_words(__m512i (&c0)[kBlocks], uint32_t c1_value,
                                                uint32_t c2_value, uint32_t c3_value, uint32_t k0,
                                                uint32_t k1) {
  const __m512i m0 = _mm512_set1_epi32(static_cast<int>(0xD2511F53u));
  const __m512i m1 = _mm512_set1_epi32(static_cast<int>(0xCD9E8D57u));
  __m512i c1[kBlocks], c2[kBlocks], c3[kBlocks];
  for (int b = 0; b < kBlocks; ++b) {
    c1[b] = _mm512_set1_epi32(static_cast<int>(c1_value));
    c2[b] = _mm512_set1_epi32(static_cast<int>(c2_value));
    c3[b] = _mm512_set1_epi32(static_cast<int>(c3_value));
  }
  for (int round = 0; round < 10; ++round) {
    const __m512i key0 = _mm512_set1_epi32(static_cast<int>(k0));
    const __m512i key1 = _mm512_set1_epi32(static_cast<int>(k1));
    for (int b = 0; b < kBlocks; ++b) {
      const __m512i hi0 = mulhi_lanes(c0[b], m0), lo0 = _mm512_mullo_epi32(c0[b], m0);
      const __m512i hi1 = mulhi_lanes(c2[b], m1), lo1 = _mm512_mullo_epi32(c2[b], m1);
      c0[b] = _mm512_xor_si512(_mm512_xor_si512(hi1, c1[b]), key0);
      c1[b] = lo1;
      c2[b] = _mm512_xor_si512(_mm512_xor_si512(hi0, c3[b]), key1);
      c3[b] = lo0;
    }
    k0 += 0x9E3779B9u;
    k1 += 0xBB67AE85u;
  }
}

// Writes fma(uint_to_unit(w0), width, lo) of philox4x32's first word for
// counters {first + k (64 bits), run (64 bits)}, attempt 0, key seed, for
// k = 0 .. n - 1, 64 at a time; returns how many it wrote (a multiple of
// 64, stopping early where the low 32 bits of the index would wrap inside
// those 64: the caller finishes the rest one by one). REQUIRES
// has_avx512_lanes().
MTF_LANES_TARGET inline int64_t philox_uniform_lanes(uint64_t seed, uint64_t run, int64_t first,
                                                     int64_t n, float lo, float width, float* out) {
  constexpr int kBlocks = 4;
  constexpr int64_t kStep = 16 * kBlocks;
  const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
  const __m512 vlo = _mm512_set1_ps(lo), vwidth = _mm512_set1_ps(width);
  const __m512 unit = _mm512_set1_ps(1.0f / 16777216.0f);
  int64_t k = 0;
  for (; k + kStep <= n; k += kStep) {
    const uint64_t li = static_cast<uint64_t>(first + k);
    const uint32_t low = static_cast<uint32_t>(li);
    if (low > 0xFFFFFFFFu - (kStep - 1)) break;  // the low word would wrap
    __m512i words[kBlocks];
    for (int b = 0; b < kBlocks; ++b)
      words[b] = _mm512_add_epi32(_mm512_set1_epi32(static_cast<int>(low + 16u * b)), iota);
    philox_first_words<kBlocks>(words, static_cast<uint32_t>(li >> 32), static_cast<uint32_t>(run),
                                static_cast<uint32_t>(run >> 32), static_cast<uint32_t>(seed),
                                static_cast<uint32_t>(seed >> 32));
    for (int b = 0; b < kBlocks; ++b) {
      const __m512 u = _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_srli_epi32(words[b], 8)), unit);
      _mm512_storeu_ps(out + k + 16 * b, _mm512_fmadd_ps(u, vwidth, vlo));
    }
  }
  return k;
}
#endif

}  // namespace mtf::kernels
