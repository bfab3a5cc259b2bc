// vector_math.h — elementwise math that vectorizes, with the same bits on
// every path. Internal.
//
// exp_lane is a branch-free exp (Cody-Waite reduction to [-ln2/2, ln2/2] and a
// degree-6 polynomial, every step an explicit fused multiply-add), within
// 2 ulp of the correctly rounded exp for normal results; results below
// FLT_MIN (x < -87.34) are 0, above FLT_MAX +inf, NaN stays NaN. exp_array
// applies it to n floats; the compiler vectorizes the loop (builds for
// AVX-512 and AVX2+FMA, chosen at run time), and since each lane does the same
// correctly rounded operations as the scalar code, an element gets the same
// bits wherever it sits in an array and whichever clone runs — so a slice of
// a tensor gets exactly the bits of the whole (reproducible mode).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>

namespace mtf::kernels {

inline float pow2_lane(int32_t n) {  // 2^n for n in [-126, 127]
  return __builtin_bit_cast(float, static_cast<int32_t>((n + 127) << 23));
}

inline float exp_lane(float x) {
  constexpr float kLo = -87.3365448f, kHi = 88.7228394f;
  // NaN computes as 0 (so the exponent stays an int in range: converting
  // NaN to int and shifting it are undefined) and is returned at the end.
  const float xc = x < kLo ? kLo : (x > kHi ? kHi : (x == x ? x : 0.0f));
  // n = round(x / ln2) (round-half-even through the 1.5 * 2^23 trick).
  const float n = std::fma(xc, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float r = std::fma(n, -0.693359375f, xc);  // ln2 split in two (Cody-Waite)
  r = std::fma(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = std::fma(p, r, 1.3981999507e-3f);
  p = std::fma(p, r, 8.3334519073e-3f);
  p = std::fma(p, r, 4.1665795894e-2f);
  p = std::fma(p, r, 1.6666665459e-1f);
  p = std::fma(p, r, 5.0000001201e-1f);
  float y = std::fma(p, r * r, r) + 1.0f;
  // y * 2^n in two exact steps, so that n = 128 or -126 stays in range.
  const int32_t ni = static_cast<int32_t>(n), half = ni >> 1;
  y = y * pow2_lane(half) * pow2_lane(ni - half);
  y = x < kLo ? 0.0f : y;
  y = x > kHi ? std::numeric_limits<float>::infinity() : y;
  return x != x ? x : y;
}

// y[i] = exp_lane(x[i]); x and y may be the same array.
void exp_array(const float* x, float* y, int64_t n);

}  // namespace mtf::kernels
