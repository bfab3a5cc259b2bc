#include "kernels/blas_threads.h"

#include <cblas.h>

#include <algorithm>

namespace mtf::kernels {

BlasThreadsShare::BlasThreadsShare(int concurrent) {
  if (concurrent <= 1) return;
  saved_ = openblas_get_num_threads();
  openblas_set_num_threads(std::max(1, saved_ / concurrent));
}

BlasThreadsShare::~BlasThreadsShare() {
  if (saved_ > 0) openblas_set_num_threads(saved_);
}

}  // namespace mtf::kernels
