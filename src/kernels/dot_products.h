// dot_products.h — einsum's products over K alone (out[batch] = sum_k a*b:
// layer norm's sums of x * y over d_model), reading float32 or bfloat16
// operands as they are. Internal to src/kernels.
//
// fixed_order: each output sums its terms one at a time in K's index order
// (reproducible mode's rule: a scalar loop and every layout give the same
// bits). Otherwise, where K is contiguous in both bfloat16 operands and the
// CPU has AVX-512, each output is summed over 16-lane partial sums (a fixed tree
// for a given K, so an output's bits depend on its own K values only, not on
// where it sits or how the batch is split) — several times faster.
#pragma once

#include <string>
#include <vector>

#include "mtf/host_tensor.h"

namespace mtf::kernels {

// out[batch] = sum over k_names of a * b. a and b: both float32 or both
// bfloat16; out float32, holding every dimension of a and b but k_names.
void batched_dot(const HostTensor& a, const HostTensor& b, const std::vector<std::string>& k_names,
                 HostTensor& out, bool fixed_order);

}  // namespace mtf::kernels
