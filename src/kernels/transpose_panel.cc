// A block transposed into a 16-wide panel; see transpose_panel.h.
#include "kernels/transpose_panel.h"

#include <immintrin.h>

#include <algorithm>

#include "kernels/gemm_fixed_order.h"

// GCC 12's unpack and shuffle intrinsics pass _mm512_undefined_ps() as
// their (unused) merge source, which -Wmaybe-uninitialized mistakes for a
// read of an uninitialized value (GCC bug 105593).
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mtf::kernels {
namespace {

// Rows [0, rows) of columns [c0, c0 + n) (n <= 16), by the usual four
// stages of in-register shuffles: 32-bit pairs, 64-bit pairs, 128-bit
// lanes within 256 bits, 256-bit halves.
__attribute__((target("avx512f"))) void block16_avx512(const float* src, int64_t ld, int64_t rows,
                                                       int64_t n, float* dst) {
  const __mmask16 cols = static_cast<__mmask16>((uint32_t{1} << n) - 1);
  __m512 r[16], t[16];
  for (int i = 0; i < 16; ++i)
    r[i] = i < rows ? _mm512_maskz_loadu_ps(cols, src + i * ld) : _mm512_setzero_ps();
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    for (int j = 0; j < 2; ++j) {
      const __m512d a = _mm512_castps_pd(t[i + j]), b = _mm512_castps_pd(t[i + j + 2]);
      r[i + j] = _mm512_castpd_ps(_mm512_unpacklo_pd(a, b));
      r[i + j + 2] = _mm512_castpd_ps(_mm512_unpackhi_pd(a, b));
    }
  }
  for (int i = 0; i < 16; i += 8) {
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0x88);
      t[i + j + 4] = _mm512_shuffle_f32x4(r[i + j], r[i + j + 4], 0xdd);
    }
  }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0x88);
    r[j + 8] = _mm512_shuffle_f32x4(t[j], t[j + 8], 0xdd);
  }
  // r[k] now holds column kOrder[k] of the block.
  static constexpr int kOrder[16] = {0, 2, 1, 3, 4, 6, 5, 7, 8, 10, 9, 11, 12, 14, 13, 15};
  for (int k = 0; k < 16; ++k)
    if (kOrder[k] < n) _mm512_storeu_ps(dst + kOrder[k] * 16, r[k]);
}

}  // namespace

void transpose_to_panel16_scalar(const float* src, int64_t ld, int64_t rows, int64_t cols,
                                 float* dst) {
  for (int64_t c = 0; c < cols; ++c)
    for (int64_t r = 0; r < 16; ++r) dst[c * 16 + r] = r < rows ? src[r * ld + c] : 0.f;
}

void transpose_to_panel16(const float* src, int64_t ld, int64_t rows, int64_t cols, float* dst) {
  static const bool avx512 = best_fixed_order_isa() == FixedOrderIsa::kAvx512;
  if (!avx512) return transpose_to_panel16_scalar(src, ld, rows, cols, dst);
  for (int64_t c0 = 0; c0 < cols; c0 += 16)
    block16_avx512(src + c0, ld, rows, std::min<int64_t>(16, cols - c0), dst + c0 * 16);
}

}  // namespace mtf::kernels
