#include "kernels/fused_rows.h"

#include <algorithm>
#include <cstring>

#include "core/check.h"
#include "kernels/arithmetic.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

// What a row does with each value: keep it, round it, or round it and also
// write its bfloat16 bits.
enum class Mode { kKeep, kRound, kRoundAndStore16 };

template <Mode kMode>
inline void put(float r, int64_t i, float* out, uint16_t* out16) {
  if constexpr (kMode == Mode::kKeep) {
    out[i] = r;
  } else {
    const uint32_t u = rounded_bits(r);
    float f;
    std::memcpy(&f, &u, sizeof f);
    out[i] = f;
    if constexpr (kMode == Mode::kRoundAndStore16) out16[i] = static_cast<uint16_t>(u >> 16);
  }
}

// Strides kSa, kSb (0 or 1, not both 0): the loops the compiler vectorizes.
template <Mode kMode, int kSa, int kSb, typename F, typename TA, typename TB>
void binary_loop(F f, const TA* a, const TB* b, int64_t n, float* out, uint16_t* out16) {
  for (int64_t i = 0; i < n; ++i)
    put<kMode>(f(element(a, kSa * i), element(b, kSb * i)), i, out, out16);
}

template <Mode kMode, typename F, typename TA, typename TB>
void binary_strides(F f, const TA* a, int64_t sa, const TB* b, int64_t sb, int64_t n, float* out,
                    uint16_t* out16) {
  if (sa == 1 && sb == 1) return binary_loop<kMode, 1, 1>(f, a, b, n, out, out16);
  if (sa == 1) return binary_loop<kMode, 1, 0>(f, a, b, n, out, out16);
  if (sb == 1) return binary_loop<kMode, 0, 1>(f, a, b, n, out, out16);
  // One value, written n times.
  binary_loop<kMode, 1, 1>(f, a, b, 1, out, out16);
  std::fill(out + 1, out + n, out[0]);
  if (out16) std::fill(out16 + 1, out16 + n, out16[0]);
}

template <Mode kMode, typename F, typename TA>
void binary_b(F f, const TA* a, const RowOperand& b, int64_t sa, int64_t n, float* out,
              uint16_t* out16) {
  if (b.bf16) {
    binary_strides<kMode>(f, a, sa, static_cast<const uint16_t*>(b.p), b.stride, n, out, out16);
  } else {
    binary_strides<kMode>(f, a, sa, static_cast<const float*>(b.p), b.stride, n, out, out16);
  }
}

template <Mode kMode, typename F>
void binary_typed(F f, const RowOperand& a, const RowOperand& b, int64_t n, float* out,
                  uint16_t* out16) {
  if (a.bf16) {
    binary_b<kMode>(f, static_cast<const uint16_t*>(a.p), b, a.stride, n, out, out16);
  } else {
    binary_b<kMode>(f, static_cast<const float*>(a.p), b, a.stride, n, out, out16);
  }
}

template <typename F>
void binary_mode(F f, const RowOperand& a, const RowOperand& b, int64_t n, float* out, bool round,
                 uint16_t* out16) {
  if (out16) return binary_typed<Mode::kRoundAndStore16>(f, a, b, n, out, out16);
  if (round) return binary_typed<Mode::kRound>(f, a, b, n, out, nullptr);
  binary_typed<Mode::kKeep>(f, a, b, n, out, nullptr);
}

template <Mode kMode, typename F, typename T>
void unary_loop(F f, const T* a, int64_t sa, int64_t n, float* out, uint16_t* out16) {
  if (sa == 1) {
    for (int64_t i = 0; i < n; ++i) put<kMode>(f(element(a, i)), i, out, out16);
    return;
  }
  put<kMode>(f(element(a, 0)), 0, out, out16);
  std::fill(out + 1, out + n, out[0]);
  if (out16) std::fill(out16 + 1, out16 + n, out16[0]);
}

template <Mode kMode, typename F>
void unary_typed(F f, const RowOperand& a, int64_t n, float* out, uint16_t* out16) {
  if (a.bf16) {
    unary_loop<kMode>(f, static_cast<const uint16_t*>(a.p), a.stride, n, out, out16);
  } else {
    unary_loop<kMode>(f, static_cast<const float*>(a.p), a.stride, n, out, out16);
  }
}

template <typename F>
void unary_mode(F f, const RowOperand& a, int64_t n, float* out, bool round, uint16_t* out16) {
  if (out16) return unary_typed<Mode::kRoundAndStore16>(f, a, n, out, out16);
  if (round) return unary_typed<Mode::kRound>(f, a, n, out, nullptr);
  unary_typed<Mode::kKeep>(f, a, n, out, nullptr);
}

}  // namespace

bool row_binary_supported(BinaryFn fn) {
  switch (fn) {
    case BinaryFn::kAdd:
    case BinaryFn::kSub:
    case BinaryFn::kMul:
    case BinaryFn::kDiv:
    case BinaryFn::kMin:
    case BinaryFn::kMax:
      return true;
    default:
      return false;
  }
}

bool row_unary_supported(UnaryFn fn) {
  return fn == UnaryFn::kIdentity || fn == UnaryFn::kSquare || fn == UnaryFn::kNegative ||
         fn == UnaryFn::kAbs || fn == UnaryFn::kReluGrad;
}

void row_binary(BinaryFn fn, const RowOperand& a, const RowOperand& b, int64_t n, float* out,
                bool round, uint16_t* out16) {
  MTF_CHECK(!out16 || round);
  switch (fn) {
    case BinaryFn::kAdd:
      return binary_mode(arith::Add<float>{}, a, b, n, out, round, out16);
    case BinaryFn::kSub:
      return binary_mode(arith::Sub<float>{}, a, b, n, out, round, out16);
    case BinaryFn::kMul:
      return binary_mode(arith::Mul<float>{}, a, b, n, out, round, out16);
    case BinaryFn::kDiv:
      return binary_mode(arith::Div<float>{}, a, b, n, out, round, out16);
    case BinaryFn::kMin:
      return binary_mode(arith::Min<float>{}, a, b, n, out, round, out16);
    case BinaryFn::kMax:
      return binary_mode(arith::Max<float>{}, a, b, n, out, round, out16);
    default:
      MTF_CHECK(false);
  }
}

void row_unary(UnaryFn fn, const RowOperand& a, int64_t n, float* out, bool round,
               uint16_t* out16) {
  MTF_CHECK(!out16 || round);
  switch (fn) {
    case UnaryFn::kIdentity:
      return unary_mode(arith::Identity{}, a, n, out, round, out16);
    case UnaryFn::kSquare:
      return unary_mode(arith::Square{}, a, n, out, round, out16);
    case UnaryFn::kNegative:
      return unary_mode(arith::Negative{}, a, n, out, round, out16);
    case UnaryFn::kAbs:
      return unary_mode(arith::Abs{}, a, n, out, round, out16);
    case UnaryFn::kReluGrad:
      return unary_mode(arith::ReluGrad{}, a, n, out, round, out16);
    default:
      MTF_CHECK(false);
  }
}

}  // namespace mtf::kernels
