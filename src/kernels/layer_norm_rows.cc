// layer_norm_rows: the bfloat16 normalization of rows over the innermost
// dimension (ops/normalize_rows.cc) and its gradient, each in one pass over
// memory. They compute, row by row, exactly the steps of the compositions,
// each rounded where that step's op stores bfloat16 (n the row length,
// 1/n as reduce_mean's float):
//   forward:  mean = sum(x) * (1/n);  c = bf16(x - bf16(mean));
//             var = sum(bf16(c * c)) * (1/n);  r = bf16(rsqrt(var + eps));
//             z = bf16(c * r)
//   gradient: m1 = bf16(sum(dz) * (1/n));  m2 = bf16(sum(bf16(dz * z)) * (1/n));
//             dx = bf16(bf16(bf16(dz - m1) - bf16(z * m2)) * r)
// the sums in float32 by reduce_row (reduce()'s order for a row, fast or
// fixed), so the results have the compositions' bits.
#include <algorithm>
#include <cmath>
#include <vector>

#include "core/bfloat16_convert.h"
#include "core/check.h"
#include "kernels/arithmetic.h"
#include "kernels/blas_threads.h"
#include "kernels/kernels.h"
#include "kernels/row_blocks.h"
#include "kernels/thread_split.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

// The mean of a row of float32 values as reduce_mean computes it.
inline float row_mean(const float* row, int64_t n, float inv_n, bool fixed_order) {
  return reduce_row(ReduceFn::kSum, row, n, fixed_order) * inv_n;
}

void forward_rows(const uint16_t* x, uint16_t* z, uint16_t* r, int64_t n, float eps, int64_t r0,
                  int64_t r1, bool fixed_order) {
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const int64_t per_block = rows_per_block(n);
  std::vector<float> buffers(static_cast<size_t>(2 * per_block * n));
  float* const c = buffers.data();      // x, then x - mean
  float* const sq = c + per_block * n;  // (x - mean)^2, then z
  for (int64_t b0 = r0; b0 < r1; b0 += per_block) {
    const int64_t k = std::min(per_block, r1 - b0), m = k * n;
    bfloat16_to_floats(x + b0 * n, c, m);
    for (int64_t row = 0; row < k; ++row) {
      float* cr = c + row * n;
      const float mean = rounded_to_bfloat16(row_mean(cr, n, inv_n, fixed_order));
      for (int64_t i = 0; i < n; ++i) cr[i] -= mean;
    }
    round_floats_to_bfloat16(c, m);
    for (int64_t i = 0; i < m; ++i) sq[i] = c[i] * c[i];
    round_floats_to_bfloat16(sq, m);
    for (int64_t row = 0; row < k; ++row) {
      const float var = row_mean(sq + row * n, n, inv_n, fixed_order);
      const float rr = rounded_to_bfloat16(1.f / std::sqrt(var + eps));  // unary_float's rsqrt
      r[b0 + row] = static_cast<uint16_t>(rounded_bits(rr) >> 16);
      const float* cr = c + row * n;
      float* zr = sq + row * n;
      for (int64_t i = 0; i < n; ++i) zr[i] = cr[i] * rr;
    }
    floats_to_bfloat16(sq, z + b0 * n, m);
  }
}

void gradient_rows(const uint16_t* dz, const uint16_t* z, const uint16_t* r, uint16_t* dx,
                   int64_t n, int64_t r0, int64_t r1, bool fixed_order) {
  const float inv_n = static_cast<float>(1.0 / static_cast<double>(n));
  const int64_t per_block = rows_per_block(n);
  std::vector<float> buffers(static_cast<size_t>(3 * per_block * n));
  float* const a = buffers.data();     // dz
  float* const b = a + per_block * n;  // z
  float* const t = b + per_block * n;  // dz * z, then z * m2
  for (int64_t b0 = r0; b0 < r1; b0 += per_block) {
    const int64_t k = std::min(per_block, r1 - b0), m = k * n;
    widen_pair_and_product(dz + b0 * n, z + b0 * n, a, b, t, m);
    for (int64_t row = 0; row < k; ++row) {
      float* ar = a + row * n;
      float* tr = t + row * n;
      const float* br = b + row * n;
      const float m1 = rounded_to_bfloat16(row_mean(ar, n, inv_n, fixed_order));
      const float m2 = rounded_to_bfloat16(row_mean(tr, n, inv_n, fixed_order));
      for (int64_t i = 0; i < n; ++i) {
        ar[i] -= m1;
        tr[i] = br[i] * m2;
      }
    }
    round_floats_to_bfloat16(a, m);
    round_floats_to_bfloat16(t, m);
    for (int64_t i = 0; i < m; ++i) a[i] -= t[i];
    round_floats_to_bfloat16(a, m);
    for (int64_t row = 0; row < k; ++row) {
      const float rr = bfloat16_bits_to_float(r[b0 + row]);
      float* ar = a + row * n;
      for (int64_t i = 0; i < n; ++i) ar[i] *= rr;
    }
    floats_to_bfloat16(a, dx + b0 * n, m);
  }
}

bool rows_shape(const HostTensor& full, const HostTensor& per_row) {
  const Shape& s = full.shape();
  return s.ndims() >= 1 && per_row.shape() == s.minus(Shape({s[s.ndims() - 1]}));
}

}  // namespace

void layer_norm_rows_bfloat16(const HostTensor& x, HostTensor& z, HostTensor& r, float epsilon,
                              bool fixed_order) {
  MTF_CHECK(x.dtype() == bfloat16 && z.dtype() == bfloat16 && r.dtype() == bfloat16 &&
            z.shape() == x.shape() && rows_shape(x, r));
  const int64_t n = x.shape()[x.shape().ndims() - 1].size;
  if (n == 0 || x.num_elements() == 0) return;
  const auto* px = static_cast<const uint16_t*>(x.raw_data());
  auto* pz = static_cast<uint16_t*>(z.raw_data());
  auto* pr = static_cast<uint16_t*>(r.raw_data());
  run_rows_on_threads(
      x.num_elements(), x.num_elements() / n, kernel_threads(),
      [&](int64_t r0, int64_t r1) { forward_rows(px, pz, pr, n, epsilon, r0, r1, fixed_order); });
}

void layer_norm_gradient_rows_bfloat16(const HostTensor& dz, const HostTensor& z,
                                       const HostTensor& r, HostTensor& dx, bool fixed_order) {
  MTF_CHECK(dz.dtype() == bfloat16 && z.dtype() == bfloat16 && r.dtype() == bfloat16 &&
            dx.dtype() == bfloat16 && dz.shape() == z.shape() && dx.shape() == z.shape() &&
            rows_shape(z, r));
  const int64_t n = z.shape()[z.shape().ndims() - 1].size;
  if (n == 0 || z.num_elements() == 0) return;
  const auto* pdz = static_cast<const uint16_t*>(dz.raw_data());
  const auto* pz = static_cast<const uint16_t*>(z.raw_data());
  const auto* pr = static_cast<const uint16_t*>(r.raw_data());
  auto* pdx = static_cast<uint16_t*>(dx.raw_data());
  run_rows_on_threads(
      z.num_elements(), z.num_elements() / n, kernel_threads(),
      [&](int64_t r0, int64_t r1) { gradient_rows(pdz, pz, pr, pdx, n, r0, r1, fixed_order); });
}

}  // namespace mtf::kernels
