// global_norm: the L2 norm of a list of tensors together (gradient
// clipping's), with one allreduce across the mesh however the tensors lie.
//
// Each processor sums the squares of its slices and the partial sums are
// allreduced over every mesh axis that splits some input. An input that
// such an axis does not split is held by several processors of the group;
// only the first of them counts it, so every element is counted once.
#include <algorithm>
#include <cstdint>

#include "kernels/kernel_context.h"
#include "mtf/bfloat16.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

// Sixteen float lanes over blocks of 4096 elements, each block's sum added
// in double: vectorisable, and the float sums stay short. The order depends
// on the slice alone, so reproducible mode (whole tensors) gets the same
// bits on every layout.
template <typename Load>
double sum_of_squares(int64_t n, Load load) {
  constexpr int64_t kLanes = 16, kBlock = 4096;
  double total = 0;
  for (int64_t begin = 0; begin < n; begin += kBlock) {
    const int64_t end = std::min(n, begin + kBlock);
    float lane[kLanes] = {};
    int64_t i = begin;
    for (; i + kLanes <= end; i += kLanes)
      for (int64_t j = 0; j < kLanes; ++j) {
        const float v = load(i + j);
        lane[j] += v * v;
      }
    for (; i < end; ++i) {
      const float v = load(i);
      lane[0] += v * v;
    }
    float block = 0;
    for (float l : lane) block += l;
    total += block;
  }
  return total;
}

double sum_of_squares(const HostTensor& t) {
  if (t.dtype() == bfloat16) {
    const auto* p = static_cast<const uint16_t*>(t.raw_data());
    return sum_of_squares(t.num_elements(),
                          [p](int64_t i) { return bfloat16_bits_to_float(p[i]); });
  }
  const float* p = t.data<float>();
  return sum_of_squares(t.num_elements(), [p](int64_t i) { return p[i]; });
}

class SumOfSquaresOp : public Operation {
 public:
  explicit SumOfSquaresOp(const std::vector<Tensor>& xs)
      : Operation(xs[0].mesh(), "global_sum_of_squares", xs, "") {
    add_output(Shape(), float32);
  }
  void compute(KernelContext& ctx) const override {
    double s = 0;
    for (int i = 0; i < ctx.num_inputs(); ++i)
      if (ctx.holds_first_copy(i)) s += sum_of_squares(ctx.input(i));
    ctx.allocate_output(0).data<float>()[0] = static_cast<float>(s);
  }
  bool computes_bfloat16() const override { return true; }
  bool differentiable() const override { return false; }
  double flops() const override {
    double n = 0;
    for (const Tensor& x : inputs()) n += 2.0 * static_cast<double>(x.shape().num_elements());
    return n;
  }
  std::vector<std::string> reduced_dims() const override {
    std::vector<std::string> dims;
    for (const Tensor& x : inputs())
      for (const Dimension& d : x.shape())
        if (std::find(dims.begin(), dims.end(), d.name) == dims.end()) dims.push_back(d.name);
    return dims;
  }
};

}  // namespace

Tensor global_norm(const std::vector<Tensor>& tensors) {
  std::vector<Tensor> xs;
  for (const Tensor& t : tensors) {
    if (!t.valid()) continue;  // a variable without gradient
    ops::require_float("global_norm", t);
    if (!xs.empty() && !(t.mesh() == xs[0].mesh())) {
      throw ValueError("global_norm: " + t.describe() + " lives on mesh \"" + t.mesh().name() +
                       "\", " + xs[0].describe() + " on mesh \"" + xs[0].mesh().name() +
                       "\"; pass tensors of one mesh");
    }
    xs.push_back(t);
  }
  if (xs.empty()) throw ValueError("global_norm: no valid tensors to take the norm of");
  return sqrt(xs[0].graph().add<SumOfSquaresOp>(xs)->output(0));
}

}  // namespace mtf
