// Fixed-order GEMM: A is packed in blocks of kMr rows (k-major, so a block's
// k-th column is kMr consecutive floats), B in panels of kNr columns (k-major
// too), and a micro-kernel keeps a kMr×kNr tile of C in registers while it
// walks k from 0 to k-1, one FMA per product. Padding rows and columns of a
// partial tile are computed and dropped; they never touch a real element's
// sum, so tiling cannot change any result.
#include "kernels/gemm_fixed_order.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

#include "core/bfloat16_convert.h"
#include "core/buffer_pool.h"
#include "mtf/bfloat16.h"

namespace mtf::kernels {
namespace {

// Register tiles: 6 rows x 16 columns (two 8-float vectors) for AVX2 and
// the scalar path, 8 rows x 32 columns (two 16-float vectors) for AVX-512.

// An element as float32: float32 itself, or bfloat16 widened (exact).
inline float value(const float* x, int64_t i) { return x[i]; }
inline float value(const uint16_t* x, int64_t i) { return bfloat16_bits_to_float(x[i]); }

template <typename T>
inline float at(const T* x, bool trans, int64_t ld, int64_t row, int64_t col) {
  return trans ? value(x, col * ld + row) : value(x, row * ld + col);
}

// A contiguous run of n elements as float32.
inline void copy_row(const float* x, int64_t n, float* out) {
  std::memcpy(out, x, sizeof(float) * n);
}
inline void copy_row(const uint16_t* x, int64_t n, float* out) { bfloat16_to_floats(x, out, n); }

// Packs rows [i0, i0+kMr) of op(A) as k groups of kMr floats (zero padded).
template <int kMr, typename T>
void pack_a(bool ta, const T* a, int64_t lda, int64_t m, int64_t k, int64_t i0, float* out) {
  const int rows = static_cast<int>(std::min<int64_t>(kMr, m - i0));
  for (int64_t p = 0; p < k; ++p) {
    for (int r = 0; r < rows; ++r) out[p * kMr + r] = at(a, ta, lda, i0 + r, p);
    for (int r = rows; r < kMr; ++r) out[p * kMr + r] = 0.f;
  }
}

// Packs columns [j0, j0+kNr) of op(B) as k groups of kNr floats (zero padded).
template <int kNr, typename T>
void pack_b(bool tb, const T* b, int64_t ldb, int64_t n, int64_t k, int64_t j0, float* out) {
  const int cols = static_cast<int>(std::min<int64_t>(kNr, n - j0));
  for (int64_t p = 0; p < k; ++p) {
    float* o = out + p * kNr;
    if (!tb && cols == kNr) {
      copy_row(b + p * ldb + j0, kNr, o);
      continue;
    }
    for (int c = 0; c < cols; ++c) o[c] = at(b, tb, ldb, p, j0 + c);
    for (int c = cols; c < kNr; ++c) o[c] = 0.f;
  }
}

// Where C goes: float32, or bfloat16 rounded once from the float32 sums.
struct Out {
  void* c = nullptr;
  bool bf16 = false;
  void row(int64_t offset, const float* v, int64_t n) const {
    if (bf16) {
      floats_to_bfloat16(v, static_cast<uint16_t*>(c) + offset, n);
    } else {
      std::memcpy(static_cast<float*>(c) + offset, v, sizeof(float) * n);
    }
  }
};

// Copies the valid rows × cols of a kMr×kNr tile into C at `offset`.
template <int kNr>
void store_tile(const float* tile, int rows, int cols, const Out& c, int64_t offset, int64_t ldc) {
  for (int r = 0; r < rows; ++r) c.row(offset + r * ldc, tile + r * kNr, cols);
}

template <int kMr, int kNr>
void micro_scalar(int64_t k, const float* pa, const float* pb, float* tile) {
  for (int i = 0; i < kMr * kNr; ++i) tile[i] = 0.f;
  for (int64_t p = 0; p < k; ++p)
    for (int r = 0; r < kMr; ++r)
      for (int c = 0; c < kNr; ++c)
        tile[r * kNr + c] = std::fma(pa[p * kMr + r], pb[p * kNr + c], tile[r * kNr + c]);
}

// Unrolled by hand: written as loops over an array of accumulators, GCC
// spilled them to memory and the kernel ran at 0.2-0.5 of this speed.
__attribute__((target("avx2,fma"))) void micro_avx2(int64_t k, const float* pa, const float* pb,
                                                    float* tile) {
  constexpr int kMr = 6, kNr = 16;
  __m256 c00 = _mm256_setzero_ps(), c01 = _mm256_setzero_ps();
  __m256 c10 = _mm256_setzero_ps(), c11 = _mm256_setzero_ps();
  __m256 c20 = _mm256_setzero_ps(), c21 = _mm256_setzero_ps();
  __m256 c30 = _mm256_setzero_ps(), c31 = _mm256_setzero_ps();
  __m256 c40 = _mm256_setzero_ps(), c41 = _mm256_setzero_ps();
  __m256 c50 = _mm256_setzero_ps(), c51 = _mm256_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m256 b0 = _mm256_loadu_ps(pb + p * kNr);
    const __m256 b1 = _mm256_loadu_ps(pb + p * kNr + 8);
    const float* ap = pa + p * kMr;
    __m256 a = _mm256_broadcast_ss(ap + 0);
    c00 = _mm256_fmadd_ps(a, b0, c00);
    c01 = _mm256_fmadd_ps(a, b1, c01);
    a = _mm256_broadcast_ss(ap + 1);
    c10 = _mm256_fmadd_ps(a, b0, c10);
    c11 = _mm256_fmadd_ps(a, b1, c11);
    a = _mm256_broadcast_ss(ap + 2);
    c20 = _mm256_fmadd_ps(a, b0, c20);
    c21 = _mm256_fmadd_ps(a, b1, c21);
    a = _mm256_broadcast_ss(ap + 3);
    c30 = _mm256_fmadd_ps(a, b0, c30);
    c31 = _mm256_fmadd_ps(a, b1, c31);
    a = _mm256_broadcast_ss(ap + 4);
    c40 = _mm256_fmadd_ps(a, b0, c40);
    c41 = _mm256_fmadd_ps(a, b1, c41);
    a = _mm256_broadcast_ss(ap + 5);
    c50 = _mm256_fmadd_ps(a, b0, c50);
    c51 = _mm256_fmadd_ps(a, b1, c51);
  }
  const __m256 rows[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21},
                               {c30, c31}, {c40, c41}, {c50, c51}};
  for (int r = 0; r < kMr; ++r) {
    _mm256_storeu_ps(tile + r * kNr, rows[r][0]);
    _mm256_storeu_ps(tile + r * kNr + 8, rows[r][1]);
  }
}

// Eight rows of two 16-float vectors: 16 independent FMA chains, enough to
// keep two 512-bit FMA pipes busy through their latency.
__attribute__((target("avx512f"))) void micro_avx512(int64_t k, const float* pa, const float* pb,
                                                     float* tile) {
  constexpr int kMr = 8, kNr = 32;
  __m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps();
  __m512 c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps();
  __m512 c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps();
  __m512 c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps();
  __m512 c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps();
  __m512 c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();
  __m512 c60 = _mm512_setzero_ps(), c61 = _mm512_setzero_ps();
  __m512 c70 = _mm512_setzero_ps(), c71 = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m512 b0 = _mm512_loadu_ps(pb + p * kNr);
    const __m512 b1 = _mm512_loadu_ps(pb + p * kNr + 16);
    const float* ap = pa + p * kMr;
    __m512 a = _mm512_set1_ps(ap[0]);
    c00 = _mm512_fmadd_ps(a, b0, c00);
    c01 = _mm512_fmadd_ps(a, b1, c01);
    a = _mm512_set1_ps(ap[1]);
    c10 = _mm512_fmadd_ps(a, b0, c10);
    c11 = _mm512_fmadd_ps(a, b1, c11);
    a = _mm512_set1_ps(ap[2]);
    c20 = _mm512_fmadd_ps(a, b0, c20);
    c21 = _mm512_fmadd_ps(a, b1, c21);
    a = _mm512_set1_ps(ap[3]);
    c30 = _mm512_fmadd_ps(a, b0, c30);
    c31 = _mm512_fmadd_ps(a, b1, c31);
    a = _mm512_set1_ps(ap[4]);
    c40 = _mm512_fmadd_ps(a, b0, c40);
    c41 = _mm512_fmadd_ps(a, b1, c41);
    a = _mm512_set1_ps(ap[5]);
    c50 = _mm512_fmadd_ps(a, b0, c50);
    c51 = _mm512_fmadd_ps(a, b1, c51);
    a = _mm512_set1_ps(ap[6]);
    c60 = _mm512_fmadd_ps(a, b0, c60);
    c61 = _mm512_fmadd_ps(a, b1, c61);
    a = _mm512_set1_ps(ap[7]);
    c70 = _mm512_fmadd_ps(a, b0, c70);
    c71 = _mm512_fmadd_ps(a, b1, c71);
  }
  const __m512 rows[kMr][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                               {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
  for (int r = 0; r < kMr; ++r) {
    _mm512_storeu_ps(tile + r * kNr, rows[r][0]);
    _mm512_storeu_ps(tile + r * kNr + 16, rows[r][1]);
  }
}

// Sixteen rows of one 16-float vector, for outputs of at most 16 columns
// (a narrow convolution's channels), where the 8x32 tile would multiply
// zeros half the time.
__attribute__((target("avx512f"))) void micro_avx512_narrow(int64_t k, const float* pa,
                                                            const float* pb, float* tile) {
  constexpr int kMr = 16, kNr = 16;
  __m512 c[kMr];
  for (int r = 0; r < kMr; ++r) c[r] = _mm512_setzero_ps();
  for (int64_t p = 0; p < k; ++p) {
    const __m512 b = _mm512_loadu_ps(pb + p * kNr);
    const float* ap = pa + p * kMr;
#pragma GCC unroll 16
    for (int r = 0; r < kMr; ++r) c[r] = _mm512_fmadd_ps(_mm512_set1_ps(ap[r]), b, c[r]);
  }
  for (int r = 0; r < kMr; ++r) _mm512_storeu_ps(tile + r * kNr, c[r]);
}

using Micro = void (*)(int64_t, const float*, const float*, float*);

// Every element's sum is one FMA chain over k whatever the threads: they
// take whole chunks of row blocks (and pack whole blocks and panels).
template <int kMr, int kNr, typename T>
void gemm(Micro micro, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a, int64_t lda,
          const T* b, int64_t ldb, const Out& c, int64_t ldc, int threads) {
  if (m == 0 || n == 0) return;
  if (k == 0) {
    const std::vector<float> zeros(static_cast<size_t>(n), 0.f);
    for (int64_t i = 0; i < m; ++i) c.row(i * ldc, zeros.data(), n);
    return;
  }
  const int64_t mblocks = (m + kMr - 1) / kMr, npanels = (n + kNr - 1) / kNr;
  auto a_buf = detail::allocate_buffer(sizeof(float) * static_cast<size_t>(mblocks * kMr * k));
  auto b_buf = detail::allocate_buffer(sizeof(float) * static_cast<size_t>(npanels * kNr * k));
  float* pa = static_cast<float*>(a_buf->data);
  float* pb = static_cast<float*>(b_buf->data);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t ib = 0; ib < mblocks; ++ib)
    pack_a<kMr>(ta, a, lda, m, k, ib * kMr, pa + ib * kMr * k);
#pragma omp parallel for num_threads(threads) if (threads > 1) schedule(static)
  for (int64_t jp = 0; jp < npanels; ++jp)
    pack_b<kNr>(tb, b, ldb, n, k, jp * kNr, pb + jp * kNr * k);
  // A chunk of row blocks stays in cache while every panel of B passes by.
  const int64_t chunk = std::max<int64_t>(1, (128 * 1024) / (sizeof(float) * kMr * k));
  const int64_t chunks = (mblocks + chunk - 1) / chunk;
#pragma omp parallel for num_threads(threads) if (threads > 1 && chunks > 1) schedule(static)
  for (int64_t ci = 0; ci < chunks; ++ci) {
    alignas(64) float tile[kMr * kNr];
    const int64_t i0 = ci * chunk, i1 = std::min(mblocks, i0 + chunk);
    for (int64_t jp = 0; jp < npanels; ++jp) {
      const float* panel = pb + jp * kNr * k;
      const int cols = static_cast<int>(std::min<int64_t>(kNr, n - jp * kNr));
      for (int64_t ib = i0; ib < i1; ++ib) {
        micro(k, pa + ib * kMr * k, panel, tile);
        const int rows = static_cast<int>(std::min<int64_t>(kMr, m - ib * kMr));
        store_tile<kNr>(tile, rows, cols, c, ib * kMr * ldc + jp * kNr, ldc);
      }
    }
  }
}

template <typename T>
void gemm_on(FixedOrderIsa isa, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const T* a,
             int64_t lda, const T* b, int64_t ldb, const Out& c, int64_t ldc, int threads) {
  switch (isa) {
    case FixedOrderIsa::kAvx512:
      return gemm<8, 32>(micro_avx512, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, threads);
    case FixedOrderIsa::kAvx2:
      return gemm<6, 16>(micro_avx2, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, threads);
    case FixedOrderIsa::kScalar:
      return gemm<6, 16>(micro_scalar<6, 16>, ta, tb, m, n, k, a, lda, b, ldb, c, ldc, threads);
  }
}

}  // namespace

FixedOrderIsa best_fixed_order_isa() {
  static const FixedOrderIsa isa = [] {
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f")) return FixedOrderIsa::kAvx512;
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
      return FixedOrderIsa::kAvx2;
    return FixedOrderIsa::kScalar;
  }();
  return isa;
}

void sgemm_fixed_order_on(FixedOrderIsa isa, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                          int64_t ldc) {
  gemm_on(isa, ta, tb, m, n, k, a, lda, b, ldb, Out{c, false}, ldc, 1);
}

void gemm_fixed_order_bfloat16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                               int64_t lda, const uint16_t* b, int64_t ldb, void* c,
                               bool c_bfloat16, int64_t ldc, int threads, FixedOrderIsa isa) {
  gemm_on(isa, ta, tb, m, n, k, a, lda, b, ldb, Out{c, c_bfloat16}, ldc, std::max(1, threads));
}

FixedOrderTile fixed_order_tile(int64_t n, FixedOrderIsa isa) {
  switch (isa) {
    case FixedOrderIsa::kAvx512:
      if (n <= 16) return {16, 16, micro_avx512_narrow};
      return {8, 32, micro_avx512};
    case FixedOrderIsa::kAvx2:
      return {6, 16, micro_avx2};
    case FixedOrderIsa::kScalar:
      break;
  }
  return {6, 16, micro_scalar<6, 16>};
}

void sgemm_fixed_order(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  sgemm_fixed_order_on(best_fixed_order_isa(), ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

void sgemm_fixed_order_scalar(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc) {
  sgemm_fixed_order_on(FixedOrderIsa::kScalar, ta, tb, m, n, k, a, lda, b, ldb, c, ldc);
}

}  // namespace mtf::kernels
