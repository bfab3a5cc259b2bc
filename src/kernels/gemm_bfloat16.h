// gemm_bfloat16.h — contractions of bfloat16 operands on the CPU's bfloat16
// dot-product instructions (AVX512-BF16), through oneDNN's matmul. Internal.
//
// gemm_bfloat16 computes, for each of `batch` matrices, C = op(A)·op(B) with
// A and B bfloat16 and every product summed in float32; C is float32, or
// bfloat16 rounded once (to nearest even) from that sum. The summation order
// is oneDNN's, which depends on the shapes and the threads: fast mode only.
// Reproducible mode, and machines where bfloat16_gemm_native() is false,
// widen the operands to float32 and run the float32 kernels instead
// (einsum.cc): products of two bfloat16 values are exact in float32, so the
// fixed-order float32 kernel gives the same bits on every machine.
//
// Threads: each call uses as many as OpenBLAS would (openblas_get_num_threads,
// which BlasThreadsShare divides between ranks that compute at once).
#pragma once

#include <cstdint>

namespace mtf::kernels {

// One batched call. Strides are in elements; lda, ldb, ldc are the stored
// row lengths (A stored k×m when ta, B stored n×k when tb), as for sgemm.
struct Bfloat16Gemm {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  bool c_bfloat16 = false;  // C is bfloat16 (else float32)
};

// True when bfloat16 contractions run on bfloat16 instructions here: oneDNN
// is built in, the CPU has AVX512-BF16, and MTF_BFLOAT16_GEMM is not
// "float32" (which forces the float32 path, as on a machine without them).
// The first call prints one line to stderr when bfloat16 falls back on this
// CPU (never when forced).
bool bfloat16_gemm_native();

// Tests: forces the float32 path (true) or lifts that (false) in this
// process, as MTF_BFLOAT16_GEMM=float32 does; returns the previous setting.
bool force_bfloat16_gemm_float32(bool forced);

// Threads for the kernels of a step with bfloat16 operands: OpenMP's, which
// the native contractions keep warm, as many as OpenBLAS would use for a
// GEMM now (BlasThreadsShare divides them between ranks computing at once);
// 1 without the native path (OpenBLAS's own threads then run the GEMMs and
// would compete with OpenMP's).
int bfloat16_kernel_threads();

// The one-line reason bfloat16_gemm_native() gave (for benchmark headers).
const char* bfloat16_gemm_description();

// Runs `g` on bfloat16 A and B into C; requires bfloat16_gemm_native().
void gemm_bfloat16(const Bfloat16Gemm& g, const void* a, const void* b, void* c);

}  // namespace mtf::kernels
