// arithmetic.h — the one definition of each elementwise arithmetic function
// and of the simplest unary maps, and of reading a float32 or bfloat16
// element as float32. The whole-tensor kernels (elementwise.cc)
// and the fused kernel's one-pass rows (fused_rows.cc) both apply these, so
// a fused result has the bits of the ops run one by one.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "mtf/bfloat16.h"

namespace mtf::kernels {

// Element i of a float32 or bfloat16 (stored as its bits) array as float32:
// bfloat16 widens exactly.
inline float element(const float* p, int64_t i) { return p[i]; }
inline float element(const uint16_t* p, int64_t i) { return bfloat16_bits_to_float(p[i]); }

// The bits of float(bfloat16(f)): float_to_bfloat16_bits's rounding written
// without a branch, so that loops of it vectorize.
inline uint32_t rounded_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  const uint32_t quiet_nan = (u | 0x00400000u) & 0xffff0000u;
  const uint32_t nearest_even = (u + 0x7fffu + ((u >> 16) & 1u)) & 0xffff0000u;
  return (u & 0x7fffffffu) > 0x7f800000u ? quiet_nan : nearest_even;
}
// float(bfloat16(f)).
inline float rounded_to_bfloat16(float f) {
  const uint32_t u = rounded_bits(f);
  float r;
  std::memcpy(&r, &u, sizeof r);
  return r;
}

}  // namespace mtf::kernels

namespace mtf::kernels::arith {

template <typename T>
struct Add {
  T operator()(T x, T y) const { return x + y; }
};
template <typename T>
struct Sub {
  T operator()(T x, T y) const { return x - y; }
};
template <typename T>
struct Mul {
  T operator()(T x, T y) const { return x * y; }
};
template <typename T>
struct Div {
  T operator()(T x, T y) const {
    if constexpr (std::is_integral_v<T>) {
      if (y == -1) return static_cast<T>(0u - static_cast<uint32_t>(x));  // INT_MIN wraps
    }
    return T(x / y);
  }
};
// NaN in either operand gives NaN (NumPy's minimum and maximum).
template <typename T>
struct Min {
  T operator()(T x, T y) const { return y < x || y != y ? y : x; }
};
template <typename T>
struct Max {
  T operator()(T x, T y) const { return y > x || y != y ? y : x; }
};

struct Identity {
  float operator()(float v) const { return v; }
};
struct Square {
  float operator()(float v) const { return v * v; }
};
struct Negative {
  float operator()(float v) const { return -v; }
};
struct Abs {
  float operator()(float v) const { return std::fabs(v); }
};
struct Relu {  // NaN stays NaN, as in NumPy and TensorFlow
  float operator()(float v) const { return v > 0.f || v != v ? v : 0.f; }
};
struct ReluGrad {
  float operator()(float v) const { return v > 0.f ? 1.f : 0.f; }
};

}  // namespace mtf::kernels::arith
