// product_rates.h — what mtf-sim --calibrate measures of matrix products
// beyond the float32 curve it fits: einsums timed through mtf, bfloat16
// products against float32's, and matrix-vector products bound by their
// bytes (decoding one token).
#pragma once

#include <cstdint>

#include "host_calibration.h"

namespace mtf::tools {

// A run of an einsum [m,k] x [k,n] written into a variable (two steps), in
// `dtype`: the median seconds; with assigned false, the product is fetched
// instead (one step and a copy of the result).
double einsum_seconds(int64_t m, int64_t k, int64_t n, DType dtype = float32, bool assigned = true);

// gemm_bfloat16_speedup of cal.machine's figures for `threads` BLAS
// threads (one_cpu or all_cpus), with its points.
void measure_bfloat16_gemm(Calibration& cal, int threads);

// gemm_memory_bandwidth and gemm_cache_bandwidth for `threads` threads,
// with their points. REQUIRES: the executor overheads measured.
void measure_product_bandwidth(Calibration& cal, int threads);

// gemm_call_seconds and gemm_small_flops: batches of tiny products (4x1 by
// 1x1, and 16x16 by 16x16) called one by one, as an einsum's batched
// products call them, with their points. REQUIRES: one BLAS thread.
void measure_small_products(Calibration& cal);

// gemm_memory_bandwidth_busy: each of `cpus` ranks of one BLAS thread
// streaming its own 4 MiB matrices at once, with its point. REQUIRES: one
// BLAS thread; the executor overheads measured.
void measure_busy_product_bandwidth(Calibration& cal, int cpus);

}  // namespace mtf::tools
