// mtf/bfloat16.h — the bfloat16 element: the upper 16 bits of an IEEE-754
// float32 (sign, the same 8-bit exponent, 7 bits of mantissa).
//
// float -> bfloat16 rounds to nearest, ties to even; overflow rounds to
// infinity; NaN stays NaN (made quiet, its sign kept); float32 subnormals
// round like any other value (no flush to zero), so the result is the same
// bits on every CPU. bfloat16 -> float is exact. Arithmetic happens in
// float32: BFloat16 is a storage type.
#pragma once

#include <cstdint>
#include <cstring>

namespace mtf {

// The bits of float `f` rounded to bfloat16.
inline uint16_t float_to_bfloat16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

// The float that bfloat16 bits `b` stand for (exact).
inline float bfloat16_bits_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

struct BFloat16 {
  uint16_t bits = 0;

  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bfloat16_bits(f)) {}
  explicit operator float() const { return bfloat16_bits_to_float(bits); }
  static BFloat16 from_bits(uint16_t b) {
    BFloat16 x;
    x.bits = b;
    return x;
  }
};
static_assert(sizeof(BFloat16) == 2, "BFloat16 is two bytes");

}  // namespace mtf
