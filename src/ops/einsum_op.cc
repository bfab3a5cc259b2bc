// einsum by dimension name, and its gradient: the gradient for one input is
// the einsum of the output gradient with the other inputs.
#include <algorithm>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

class EinsumOp : public Operation {
 public:
  EinsumOp(const std::vector<Tensor>& inputs, const Shape& out_shape, const std::string& name)
      : Operation(inputs.at(0).mesh(), "einsum", inputs, name) {
    ops::check_same_dtype("einsum", inputs);
    ops::reject_bool("einsum", inputs.at(0));
    ops::check_consistent_sizes("einsum", inputs);
    for (const Dimension& d : out_shape) {
      bool found = false;
      for (const Tensor& t : inputs) {
        int i = t.shape().index_of(d.name);
        if (i < 0) continue;
        found = true;
        if (t.shape()[i].size != d.size) {
          throw ShapeError(detail::str_cat("einsum \"", this->name(), "\": output dimension ",
                                           d.to_string(), " disagrees in size with input ",
                                           t.describe()));
        }
      }
      if (!found) {
        std::string ins;
        for (const Tensor& t : inputs) ins += " " + t.describe();
        throw ShapeError(detail::str_cat(
            "einsum \"", this->name(), "\": output dimension \"", d.name,
            "\" appears in no input (inputs:", ins,
            "); every output dimension must come from an input (use broadcast to add one)"));
      }
    }
    add_output(out_shape, inputs[0].dtype());
  }

  void compute(KernelContext& ctx) const override {
    std::vector<const HostTensor*> ins;
    for (int i = 0; i < ctx.num_inputs(); ++i) ins.push_back(&ctx.input(i));
    HostTensor& out = ctx.allocate_output(0);
    if (ctx.plan()) {
      kernels::einsum(*ctx.plan(), ins, out);
    } else {
      kernels::einsum(ins, out, ctx.state().reproducible);
    }
  }

  bool differentiable() const override { return is_floating(output(0).dtype()); }
  // bfloat16 operands go to the bfloat16 GEMM, or are widened by the kernel.
  bool computes_bfloat16() const override { return true; }

  std::vector<std::string> reduced_dims() const override {
    std::vector<std::string> r;
    for (const Tensor& t : inputs())
      for (const Dimension& d : t.shape())
        if (!output(0).shape().contains(d.name) && std::find(r.begin(), r.end(), d.name) == r.end())
          r.push_back(d.name);
    return r;
  }

  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    std::vector<Tensor> grads;
    const auto& ins = inputs();
    for (size_t i = 0; i < ins.size(); ++i) {
      std::vector<Tensor> operands = {g[0]};
      for (size_t j = 0; j < ins.size(); ++j)
        if (j != i) operands.push_back(ins[j]);
      // Dimensions of input i that only it had (summed away inside it) come
      // back by broadcasting.
      std::vector<Dimension> reachable;
      for (const Dimension& d : ins[i].shape()) {
        bool seen = false;
        for (const Tensor& t : operands) seen = seen || t.shape().contains(d.name);
        if (seen) reachable.push_back(d);
      }
      Tensor gi = einsum(operands, Shape(reachable));
      grads.push_back(broadcast(gi, ins[i].shape()));
    }
    return grads;
  }

  double flops() const override {
    // Multiply-adds over the union of all dimensions (2 flops each).
    Shape all;
    for (const Tensor& t : inputs()) all = all.union_with(t.shape());
    all = all.union_with(output(0).shape());
    return inputs().size() > 1 ? 2.0 * static_cast<double>(all.num_elements())
                               : static_cast<double>(all.num_elements());
  }
};

}  // namespace

namespace ops {

bool is_einsum(const Operation& op) { return dynamic_cast<const EinsumOp*>(&op) != nullptr; }

std::shared_ptr<const kernels::KernelPlan> plan_kernel(const Operation& op,
                                                       const std::vector<Shape>& input_slices,
                                                       const std::vector<Shape>& output_slices,
                                                       bool reproducible) {
  if (!dynamic_cast<const EinsumOp*>(&op)) return nullptr;
  return kernels::plan_einsum(input_slices, output_slices.at(0), op.output(0).dtype(),
                              reproducible);
}

}  // namespace ops

Tensor einsum(const std::vector<Tensor>& inputs, const Shape& output_shape,
              const std::string& name) {
  if (inputs.empty()) throw ValueError("einsum: needs at least one input");
  for (const Tensor& t : inputs)
    if (!t.valid()) throw ValueError("einsum: an input is an invalid mtf::Tensor");
  return inputs[0].graph().add<EinsumOp>(inputs, output_shape, name)->output(0);
}

Tensor einsum(const std::vector<Tensor>& inputs, const std::string& name) {
  // Output: dimensions that appear in exactly one input, in order.
  std::vector<Dimension> dims;
  for (size_t i = 0; i < inputs.size(); ++i) {
    for (const Dimension& d : inputs[i].shape()) {
      int count = 0;
      for (const Tensor& t : inputs) count += t.shape().contains(d.name);
      if (count == 1) dims.push_back(d);
    }
  }
  return einsum(inputs, Shape(dims), name);
}

Tensor matmul(const Tensor& a, const Tensor& b, const Shape* output_shape) {
  if (output_shape) return einsum({a, b}, *output_shape);
  return einsum({a, b});
}

}  // namespace mtf
