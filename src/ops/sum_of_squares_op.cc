// reduce_sum_of_squares: the sum of the squares of a product of broadcast
// factors over some dimensions, as one reduction op (kernels::sum_of_squares).
#include <string>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

class SumOfSquaresOp : public Operation {
 public:
  SumOfSquaresOp(const std::vector<Tensor>& factors, const Shape& out)
      : Operation(factors[0].mesh(), "reduce_sum_of_squares", factors, "") {
    add_output(out, float32);
  }
  void compute(KernelContext& ctx) const override {
    std::vector<const HostTensor*> in;
    for (int i = 0; i < ctx.num_inputs(); ++i) in.push_back(&ctx.input(i));
    kernels::sum_of_squares(in, ctx.allocate_output(0), ctx.state().reproducible);
  }
  bool computes_bfloat16() const override { return true; }  // reads a bfloat16 first factor
  bool differentiable() const override { return false; }
  double flops() const override {
    return static_cast<double>(inputs().size() + 1) *
           static_cast<double>(inputs()[0].shape().num_elements());
  }
  std::vector<std::string> reduced_dims() const override {
    return inputs()[0].shape().minus(output(0).shape()).names();
  }
};

}  // namespace

Tensor reduce_sum_of_squares(const std::vector<Tensor>& factors, const Shape& output_shape) {
  const std::string who = "reduce_sum_of_squares";
  if (factors.empty() || factors.size() > 3) {
    throw ValueError(detail::str_cat(who, ": takes one to three factors, not ", factors.size()));
  }
  const Shape& space = factors[0].shape();
  for (const Tensor& f : factors) {
    if (f.dtype() != float32 && !(f.dtype() == bfloat16 && &f == &factors[0])) {
      throw DTypeError(who + ": " + f.describe() + " is " + dtype_name(f.dtype()) +
                       "; the first factor is float32 or bfloat16, the others float32 (cast "
                       "them first)");
    }
    if (!(f.mesh() == factors[0].mesh())) {
      throw ValueError(who + ": " + f.describe() + " is on another mesh than " +
                       factors[0].describe());
    }
    for (const Dimension& d : f.shape()) {
      const int i = space.index_of(d.name);
      if (i < 0 || space[i].size != d.size) {
        throw ShapeError(who + ": factor " + f.describe() + " has a dimension " + d.to_string() +
                         " that the first factor " + factors[0].describe() +
                         " lacks; the others broadcast into the first's shape");
      }
    }
  }
  for (const Dimension& d : output_shape) {
    const int i = space.index_of(d.name);
    if (i < 0 || space[i].size != d.size) {
      throw ShapeError(who + ": output dimension " + d.to_string() +
                       " is not a dimension of the first factor " + factors[0].describe());
    }
  }
  return factors[0].graph().add<SumOfSquaresOp>(factors, output_shape)->output(0);
}

}  // namespace mtf
