// gemm_bfloat16.h — contractions of bfloat16 operands. Internal.
//
// gemm_bfloat16 computes, for each of `batch` matrices, C = op(A)·op(B) with
// A and B bfloat16 and every product summed in float32; C is float32, or
// bfloat16 rounded once (to nearest even) from that sum. Two engines:
// - fast mode on a CPU with AVX512-BF16 (VDPBF16PS): oneDNN's matmul, whose
//   summation order depends on the shapes and threads;
// - fast mode on CPUs without the instructions, builds without oneDNN and
//   strides oneDNN does not take: OpenBLAS's sgemm (float32 mode's kernel)
//   on operands widened to float32 (exact);
// - reproducible mode (fixed_order): the fixed-order float32 kernel
//   (gemm_fixed_order.h), reading bfloat16 as it packs. Products of two
//   bfloat16 values are exact in float32, so its bits are those of the
//   float32 kernel on widened copies, on every machine, at any thread count.
//
// Threads: as many as OpenBLAS would use for a GEMM now
// (openblas_get_num_threads, which BlasThreadsShare divides between ranks
// that compute at once), OpenMP's.
#pragma once

#include <cstdint>

namespace mtf::kernels {

// One batched call. Strides are in elements; lda, ldb, ldc are the stored
// row lengths (A stored k×m when ta, B stored n×k when tb), as for sgemm.
// The matrices form a grid of up to two batch axes: `outer` rows of `batch`
// (attention's batch × heads, whose strides seldom merge into one); oneDNN
// takes both in one call, which keeps its fastest kernels (a loop of calls
// over one strided axis falls back to slower ones).
struct Bfloat16Gemm {
  bool ta = false, tb = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0;
  int64_t batch = 1, stride_a = 0, stride_b = 0, stride_c = 0;
  bool c_bfloat16 = false;   // C is bfloat16 (else float32)
  bool fixed_order = false;  // reproducible mode: the fixed-order kernel
  int64_t outer = 1, outer_a = 0, outer_b = 0, outer_c = 0;  // the outer batch axis
};

// True when bfloat16 contractions in fast mode run on bfloat16 instructions
// here: oneDNN is built in, the CPU has AVX512-BF16, and MTF_BFLOAT16_GEMM
// is not "float32" (which forces the float32 kernel, as on a machine
// without them). The first call prints one line to stderr when bfloat16
// falls back on this CPU (never when forced).
bool bfloat16_gemm_native();

// Tests: forces the float32 path (true) or lifts that (false) in this
// process, as MTF_BFLOAT16_GEMM=float32 does; returns the previous setting.
bool force_bfloat16_gemm_float32(bool forced);

// Threads for the kernels of a step with bfloat16 operands: OpenMP's, which
// the bfloat16 contractions keep warm (OpenBLAS's own threads stay asleep
// in a bfloat16 program), as many as OpenBLAS would use for a GEMM now.
int bfloat16_kernel_threads();

// The one-line reason bfloat16_gemm_native() gave (for benchmark headers).
const char* bfloat16_gemm_description();

// Runs `g` on bfloat16 A and B into C: on the fixed-order kernel when
// g.fixed_order, else on oneDNN where bfloat16_gemm_native() (and oneDNN
// takes the strides), else on sgemm over widened copies.
void gemm_bfloat16(const Bfloat16Gemm& g, const void* a, const void* b, void* c);

}  // namespace mtf::kernels
