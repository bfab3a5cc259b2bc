#include "kernels/dot_products.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/check.h"
#include "kernels/arithmetic.h"
#include "kernels/einsum_shapes.h"
#include "kernels/kernels.h"
#include "kernels/vector_lanes.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

// A dot product of k contiguous values of x and y on vector lanes: four
// 16-lane accumulators over blocks of 64, then one over the rest, added in
// a fixed tree.
template <typename T>
using VectorDot = float (*)(const T*, const T*, int64_t);

#if defined(__x86_64__)
template <typename T>
MTF_LANES_TARGET float dot_avx512(const T* x, const T* y, int64_t k) {
  __m512 acc0 = _mm512_setzero_ps(), acc1 = acc0, acc2 = acc0, acc3 = acc0;
  int64_t p = 0;
  for (; p + 64 <= k; p += 64) {
    acc0 = _mm512_fmadd_ps(lanes(x + p), lanes(y + p), acc0);
    acc1 = _mm512_fmadd_ps(lanes(x + p + 16), lanes(y + p + 16), acc1);
    acc2 = _mm512_fmadd_ps(lanes(x + p + 32), lanes(y + p + 32), acc2);
    acc3 = _mm512_fmadd_ps(lanes(x + p + 48), lanes(y + p + 48), acc3);
  }
  for (; p + 16 <= k; p += 16) acc0 = _mm512_fmadd_ps(lanes(x + p), lanes(y + p), acc0);
  if (p < k) {
    const __mmask16 m = first_lanes(k - p);
    acc1 = _mm512_fmadd_ps(lanes_first(x + p, m), lanes_first(y + p, m), acc1);
  }
  alignas(64) float sums[16];
  _mm512_store_ps(sums, _mm512_add_ps(_mm512_add_ps(acc0, acc1), _mm512_add_ps(acc2, acc3)));
  for (int width = 8; width >= 1; width /= 2)
    for (int j = 0; j < width; ++j) sums[j] += sums[j + width];
  return sums[0];
}

// o[i] = fma(x[i], y[i], o[i]) for i < n: each element's own fused
// multiply-add, so the same bits on lanes as in the scalar loop.
template <typename T>
MTF_LANES_TARGET void multiply_add_row_avx512(const T* x, const T* y, float* o, int64_t n) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    _mm512_storeu_ps(o + i, _mm512_fmadd_ps(lanes(x + i), lanes(y + i), _mm512_loadu_ps(o + i)));
  if (i < n) {
    const __mmask16 m = first_lanes(n - i);
    _mm512_mask_storeu_ps(o + i, m,
                          _mm512_fmadd_ps(lanes_first(x + i, m), lanes_first(y + i, m),
                                          _mm512_maskz_loadu_ps(m, o + i)));
  }
}

// bfloat16 operands only: float32 runs keep the fixed-order dots they have
// always had (their fast-mode results, printed in the docs, stay as they were).
template <typename T>
VectorDot<T> pick_vector_dot() {
  if constexpr (!std::is_same_v<T, uint16_t>) return nullptr;
  return has_avx512_lanes() ? &dot_avx512<T> : nullptr;
}
#else
template <typename T>
VectorDot<T> pick_vector_dot() {
  return nullptr;
}
#endif

template <typename T>
void multiply_add_row(const T* x, const T* y, float* o, int64_t n) {
#if defined(__x86_64__)
  if (has_avx512_lanes()) return multiply_add_row_avx512(x, y, o, n);
#endif
  for (int64_t i = 0; i < n; ++i) o[i] = std::fma(element(x, i), element(y, i), o[i]);
}

// out[batch] = sum over K of a * b, when the product has neither M nor N: one
// pass of fused multiply-adds over [K..., batch...] in row-major order, so each
// output element sums its terms in K's index order (fixed-order mode's rule).
// T: float, or uint16_t for bfloat16 operands read as they are (their
// products are exact in float32: the bits of the float32 copies').
template <typename T>
void batched_dot_typed(const HostTensor& a, const HostTensor& b, const Names& k_names,
                       HostTensor& out, bool fixed_order) {
  const T* pa = static_cast<const T*>(a.raw_data());
  const T* pb = static_cast<const T*>(b.raw_data());
  float* po = out.data<float>();
  if (folded_stride(a.shape(), k_names) == 1 && folded_stride(b.shape(), k_names) == 1) {
    // K contiguous in both: dot products along K, eight outputs at a time so
    // that their independent chains overlap (or each on vector lanes).
    const int64_t k = product(a.shape(), k_names);
    const VectorDot<T> vector_dot = fixed_order ? nullptr : pick_vector_dot<T>();
    if (vector_dot) {
      for_each_row<3>(plan3(out.shape().names(), out.shape(), a.shape(), b.shape(), out.shape()),
                      [&](const int64_t* off, int64_t n, const int64_t* st) {
                        for (int64_t i = 0; i < n; ++i)
                          po[off[2] + i * st[2]] =
                              vector_dot(pa + off[0] + i * st[0], pb + off[1] + i * st[1], k);
                      });
      return;
    }
    for_each_row<3>(plan3(out.shape().names(), out.shape(), a.shape(), b.shape(), out.shape()),
                    [&](const int64_t* off, int64_t n, const int64_t* st) {
                      constexpr int kLanes = 8;
                      int64_t i = 0;
                      for (; i + kLanes <= n; i += kLanes) {
                        float acc[kLanes] = {};
                        for (int64_t p = 0; p < k; ++p)
                          for (int j = 0; j < kLanes; ++j)
                            acc[j] = std::fma(element(pa, off[0] + (i + j) * st[0] + p),
                                              element(pb, off[1] + (i + j) * st[1] + p), acc[j]);
                        for (int j = 0; j < kLanes; ++j) po[off[2] + (i + j) * st[2]] = acc[j];
                      }
                      for (; i < n; ++i) {
                        float acc = 0.f;
                        for (int64_t p = 0; p < k; ++p)
                          acc = std::fma(element(pa, off[0] + i * st[0] + p),
                                         element(pb, off[1] + i * st[1] + p), acc);
                        po[off[2] + i * st[2]] = acc;
                      }
                    });
    return;
  }
  Names axes = k_names;
  for (const auto& d : out.shape()) axes.push_back(d.name);
  fill(out, 0.f);
  for_each_row<3>(plan3(axes, a.shape(), a.shape(), b.shape(), out.shape()),
                  [&](const int64_t* off, int64_t n, const int64_t* st) {
                    const T* x = pa + off[0];
                    const T* y = pb + off[1];
                    float* o = po + off[2];
                    if (st[2] == 0) {  // a row along K: one output element
                      float acc = *o;
                      for (int64_t i = 0; i < n; ++i)
                        acc = std::fma(element(x, i * st[0]), element(y, i * st[1]), acc);
                      *o = acc;
                    } else if (st[0] == 1 && st[1] == 1 && st[2] == 1) {
                      multiply_add_row(x, y, o, n);
                    } else {
                      for (int64_t i = 0; i < n; ++i)
                        o[i * st[2]] =
                            std::fma(element(x, i * st[0]), element(y, i * st[1]), o[i * st[2]]);
                    }
                  });
}

}  // namespace

void batched_dot(const HostTensor& a, const HostTensor& b, const Names& k_names, HostTensor& out,
                 bool fixed_order) {
  MTF_CHECK(a.dtype() == b.dtype() && out.dtype() == float32);
  if (a.dtype() == bfloat16) return batched_dot_typed<uint16_t>(a, b, k_names, out, fixed_order);
  batched_dot_typed<float>(a, b, k_names, out, fixed_order);
}

}  // namespace mtf::kernels
