// softmax_rows: bfloat16 softmax and its gradient over the innermost
// dimension, each in one pass over memory. They compute, row by row, exactly
// the steps of the bfloat16 compositions (ops/reduce_ops.cc), each rounded
// where that step's op stores bfloat16:
//   softmax:  m = max(x);  d = bf16(x - m);  e = bf16(exp(d));  s = sum(e)
//             (float32, reduce()'s order for a row);  r = bf16(1 / s);
//             y = bf16(e * r)
//   gradient: t = bf16(dy * y);  s = sum(t) (float32, as above);
//             u = bf16(dy - bf16(s));  dx = bf16(y * u)
// with the functions those ops run (exp_lane, reduce_row, the nearest-even
// rounding), so the results have the compositions' bits, fast or fixed order.
#include <algorithm>
#include <vector>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/arithmetic.h"
#include "kernels/blas_threads.h"
#include "kernels/kernels.h"
#include "kernels/row_blocks.h"
#include "kernels/thread_split.h"
#include "kernels/vector_math.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

// Rows [r0, r1) of n values each, a block of rows at a time: the maxima;
// x - m rounded; exp (exp_array: exp_lane's bits) rounded; the sums; the
// scaled values rounded and stored.
void rows(const uint16_t* x, uint16_t* y, int64_t n, int64_t r0, int64_t r1, bool fixed_order) {
  const int64_t per_block = rows_per_block(n);
  std::vector<float> v(static_cast<size_t>(per_block * n));
  float* const f = v.data();
  for (int64_t b0 = r0; b0 < r1; b0 += per_block) {
    const int64_t k = std::min(per_block, r1 - b0);
    bfloat16_to_floats(x + b0 * n, f, k * n);
    for (int64_t r = 0; r < k; ++r) {
      float* row = f + r * n;
      // The maximum is a value of the row: exact in bfloat16.
      const float m = reduce_row(ReduceFn::kMax, row, n, false);
      for (int64_t i = 0; i < n; ++i) row[i] -= m;
    }
    round_floats_to_bfloat16(f, k * n);
    exp_array(f, f, k * n);
    round_floats_to_bfloat16(f, k * n);
    for (int64_t r = 0; r < k; ++r) {
      float* row = f + r * n;
      const float s = reduce_row(ReduceFn::kSum, row, n, fixed_order);
      const float scale = rounded_to_bfloat16(1.f / s);  // unary_float's reciprocal
      for (int64_t i = 0; i < n; ++i) row[i] *= scale;
    }
    floats_to_bfloat16(f, y + b0 * n, k * n);
  }
}

// The gradient's rows [r0, r1), a block of rows at a time.
void gradient_rows(const uint16_t* dy, const uint16_t* y, uint16_t* dx, int64_t n, int64_t r0,
                   int64_t r1, bool fixed_order) {
  const int64_t per_block = rows_per_block(n);
  std::vector<float> buffers(static_cast<size_t>(3 * per_block * n));
  float* const a = buffers.data();     // dy
  float* const b = a + per_block * n;  // y
  float* const t = b + per_block * n;  // dy * y, then y * u
  for (int64_t b0 = r0; b0 < r1; b0 += per_block) {
    const int64_t k = std::min(per_block, r1 - b0), m = k * n;
    widen_pair_and_product(dy + b0 * n, y + b0 * n, a, b, t, m);
    for (int64_t r = 0; r < k; ++r) {
      const float s = rounded_to_bfloat16(reduce_row(ReduceFn::kSum, t + r * n, n, fixed_order));
      float* row = a + r * n;
      for (int64_t i = 0; i < n; ++i) row[i] -= s;
    }
    round_floats_to_bfloat16(a, m);
    for (int64_t i = 0; i < m; ++i) t[i] = b[i] * a[i];
    floats_to_bfloat16(t, dx + b0 * n, m);
  }
}

}  // namespace

void softmax_rows_bfloat16(const HostTensor& x, HostTensor& y, bool fixed_order) {
  MTF_CHECK(x.dtype() == bfloat16 && y.dtype() == bfloat16 && x.shape() == y.shape() &&
            x.shape().ndims() >= 1);
  const int64_t n = x.shape()[x.shape().ndims() - 1].size;
  if (n == 0 || x.num_elements() == 0) return;
  const int64_t count = x.num_elements() / n;
  const auto* px = static_cast<const uint16_t*>(x.raw_data());
  auto* py = static_cast<uint16_t*>(y.raw_data());
  run_rows_on_threads(x.num_elements(), count, kernel_threads(),
                      [&](int64_t r0, int64_t r1) { rows(px, py, n, r0, r1, fixed_order); });
}

void softmax_gradient_rows_bfloat16(const HostTensor& dy, const HostTensor& y, HostTensor& dx,
                                    bool fixed_order) {
  MTF_CHECK(dy.dtype() == bfloat16 && y.dtype() == bfloat16 && dx.dtype() == bfloat16 &&
            dy.shape() == y.shape() && dx.shape() == y.shape() && y.shape().ndims() >= 1);
  const int64_t n = y.shape()[y.shape().ndims() - 1].size;
  if (n == 0 || y.num_elements() == 0) return;
  const auto* pdy = static_cast<const uint16_t*>(dy.raw_data());
  const auto* py = static_cast<const uint16_t*>(y.raw_data());
  auto* pdx = static_cast<uint16_t*>(dx.raw_data());
  run_rows_on_threads(
      y.num_elements(), y.num_elements() / n, kernel_threads(),
      [&](int64_t r0, int64_t r1) { gradient_rows(pdy, py, pdx, n, r0, r1, fixed_order); });
}

}  // namespace mtf::kernels
