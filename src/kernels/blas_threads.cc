#include "kernels/blas_threads.h"

#include <cblas.h>

#include <algorithm>

namespace mtf::kernels {

namespace {
thread_local int step_kernel_threads = 1;
}  // namespace

int kernel_threads() { return step_kernel_threads; }

KernelThreadsScope::KernelThreadsScope(int threads) : saved_(step_kernel_threads) {
  step_kernel_threads = std::max(1, threads);
}

KernelThreadsScope::~KernelThreadsScope() { step_kernel_threads = saved_; }

BlasThreadsShare::BlasThreadsShare(int concurrent) {
  if (concurrent <= 1) return;
  saved_ = openblas_get_num_threads();
  openblas_set_num_threads(std::max(1, saved_ / concurrent));
}

BlasThreadsShare::~BlasThreadsShare() {
  if (saved_ > 0) openblas_set_num_threads(saved_);
}

}  // namespace mtf::kernels
