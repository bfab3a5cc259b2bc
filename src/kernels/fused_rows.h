// fused_rows.h — the fused kernel's one-pass rows: an arithmetic op (add,
// subtract, multiply, divide, minimum, maximum) or a simple unary map
// (identity, square, negative, abs, relu_grad) that reads its float32 or bfloat16
// operands straight from their arrays, rounds its float32 result to
// bfloat16 when its op stores bfloat16, and also writes it as bfloat16 bits
// when it is a bfloat16 output. Where the block kernel made four passes over
// a block (widen the operand, apply the op, round, store), these make one.
//
// Bits: each value is the arithmetic.h function of the widened operands
// (exact), rounded as float_to_bfloat16_bits rounds (to nearest even, NaN
// quieted, subnormals kept), so fused results keep the bits of the ops run
// one by one.
#pragma once

#include <cstdint>

#include "kernels/kernels.h"

namespace mtf::kernels {

// Element i of an operand is at p[i * stride], stride 0 (one value) or 1,
// float32 or bfloat16 bits.
struct RowOperand {
  const void* p = nullptr;
  int64_t stride = 0;
  bool bf16 = false;
};

bool row_binary_supported(BinaryFn fn);
bool row_unary_supported(UnaryFn fn);

// out[i] = fn(a[i], b[i]) for i < n; round: rounded to bfloat16 precision;
// out16 (may be null): the same values as bfloat16 bits. REQUIRES:
// row_binary_supported(fn); out16 only with round.
void row_binary(BinaryFn fn, const RowOperand& a, const RowOperand& b, int64_t n, float* out,
                bool round, uint16_t* out16);
// out[i] = fn(a[i]) likewise. REQUIRES: row_unary_supported(fn).
void row_unary(UnaryFn fn, const RowOperand& a, int64_t n, float* out, bool round, uint16_t* out16);

}  // namespace mtf::kernels
