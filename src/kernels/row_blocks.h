// row_blocks.h — what the row kernels (softmax_rows.cc, layer_norm_rows.cc)
// share: rows are evaluated a block at a time, as many as keep the block's
// float32 values in L1, and the gradients start from two widened operands
// and their product rounded as a bfloat16 multiply op rounds it.
#pragma once

#include <algorithm>
#include <cstdint>

#include "core/bfloat16_convert.h"

namespace mtf::kernels {

// Rows of n values evaluated together (at least one).
inline int64_t rows_per_block(int64_t n) {
  constexpr int64_t kBlockFloats = 2048;
  return std::max<int64_t>(1, kBlockFloats / n);
}

// a, b = m bfloat16 values of p and q widened; t = bf16(a * b).
inline void widen_pair_and_product(const uint16_t* p, const uint16_t* q, float* a, float* b,
                                   float* t, int64_t m) {
  bfloat16_to_floats(p, a, m);
  bfloat16_to_floats(q, b, m);
  for (int64_t i = 0; i < m; ++i) t[i] = a[i] * b[i];
  round_floats_to_bfloat16(t, m);
}

}  // namespace mtf::kernels
