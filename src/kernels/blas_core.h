// blas_core.h — keeps OpenBLAS off its generic kernels on a modern CPU.
// Internal.
//
// Debian's OpenBLAS (0.3.21, built for every x86-64 core) detects some recent
// CPUs as a generic core ("Prescott": SSE3 kernels, about 3x slower sgemm)
// when OPENBLAS_CORETYPE is unset, and says nothing. check_blas_core() runs
// once per process, before the first GEMM: when the core OpenBLAS uses lacks
// AVX2 but the CPU has AVX2+FMA (or AVX-512), it switches OpenBLAS to the
// core that fits (SkylakeX with AVX-512, else Haswell) and prints one line to
// stderr saying so. MTF_BLAS_CORE=keep keeps OpenBLAS's choice (no message);
// MTF_BLAS_CORE=<core> asks for that core whatever the CPU.
#pragma once

#include <string>

namespace mtf::kernels {

struct CpuVector {
  bool avx2_fma = false;
  bool avx512 = false;  // F, BW, VL and DQ: what OpenBLAS's SkylakeX kernels use
};
CpuVector cpu_vector_support();

// The core OpenBLAS should use instead of `core` on a CPU with `cpu`, or ""
// when `core` is fine (it has AVX2 kernels, or the CPU has no AVX2).
std::string better_blas_core(const std::string& core, const CpuVector& cpu);

struct BlasCoreCheck {
  std::string detected;  // the core OpenBLAS had chosen
  std::string active;    // the core in use after the check
  std::string message;   // the line printed, or "" when nothing was said
};

// Does the check once per process (later calls return the first result).
const BlasCoreCheck& check_blas_core();

// The core OpenBLAS is using now.
std::string blas_core_name();

}  // namespace mtf::kernels
