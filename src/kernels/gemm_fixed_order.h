// gemm_fixed_order.h — a float32 GEMM whose every result element is summed
// in one fixed order, whatever the matrix sizes, the tiling or the threads.
// Internal.
//
// BLAS libraries tune their summation order to the problem: OpenBLAS gives
// an element of A·B different bits when A has other rows, B other columns or
// the library other threads. The mesh's reproducible mode (MeshConfig::
// reproducible) needs the bits of one processor on every layout, so it uses
// this kernel: c[i][j] = fma(a[i][k-1], b[k-1][j], ... fma(a[i][1], b[1][j],
// fma(a[i][0], b[0][j], +0))) — one fused multiply-add per product, in
// index order. FMA is correctly rounded in hardware and in std::fma, so the
// vector paths (AVX-512 or AVX2+FMA, the best the CPU has chosen at run
// time) and the scalar path agree bit for bit, on any x86-64 machine.
#pragma once

#include <cstdint>

namespace mtf::kernels {

// Row-major C[m×n] = op(A)·op(B): op(A) is m×k (A stored k×m when ta), op(B)
// is k×n (B stored n×k when tb); lda, ldb, ldc are the stored row lengths.
void sgemm_fixed_order(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                       int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

// Which instructions a call uses; tests run every one the CPU has.
enum class FixedOrderIsa { kScalar, kAvx2, kAvx512 };
FixedOrderIsa best_fixed_order_isa();
void sgemm_fixed_order_on(FixedOrderIsa isa, bool ta, bool tb, int64_t m, int64_t n, int64_t k,
                          const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
                          int64_t ldc);

// bfloat16 A and B (uint16_t bit patterns), read as float32 while packing:
// products of two bfloat16 values are exact in float32, so C has the bits of
// sgemm_fixed_order on widened copies (rounded once to bfloat16 when
// c_bfloat16). `threads` > 1 splits the work over OpenMP threads; every
// element is still one chain, so the bits do not depend on it.
void gemm_fixed_order_bfloat16(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const uint16_t* a,
                               int64_t lda, const uint16_t* b, int64_t ldb, void* c,
                               bool c_bfloat16, int64_t ldc, int threads,
                               FixedOrderIsa isa = best_fixed_order_isa());

// The register tile behind sgemm_fixed_order, for callers that pack their
// own operands (the direct convolution): fn(k, pa, pb, tile) sets
// tile[r * nr + c] = the fma chain over p in [0, k), from +0, of
// pa[p * mr + r] · pb[p * nr + c] — the same bits as sgemm_fixed_order.
// n: the output's columns (a narrower tile serves n <= 16).
struct FixedOrderTile {
  int mr, nr;
  void (*fn)(int64_t k, const float* pa, const float* pb, float* tile);
};
FixedOrderTile fixed_order_tile(int64_t n, FixedOrderIsa isa = best_fixed_order_isa());

// The same, without the vector path (for tests: both must agree).
void sgemm_fixed_order_scalar(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
                              int64_t lda, const float* b, int64_t ldb, float* c, int64_t ldc);

}  // namespace mtf::kernels
