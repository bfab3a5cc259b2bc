// recompute_grad: fn's ops run in the forward pass as usual, but their
// outputs reach the rest of the graph through a RecomputeOp, whose gradient
// builds fn again from the same inputs and differentiates the copy. The
// backward pass thus never reads fn's inner tensors, and the lowering's
// lifetimes free them after the forward pass.
#include <set>
#include <utility>

#include "core/check.h"
#include "kernels/kernel_context.h"
#include "mtf/errors.h"
#include "mtf/gradients.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

std::vector<Tensor> joined(std::vector<Tensor> a, const std::vector<Tensor>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Inputs: the tensors fn's ops read from outside fn (its explicit inputs
// first, then variables and any other tensor it captured), which it takes
// only so that gradients reach them; then fn's outputs, which it passes on.
class RecomputeOp : public Operation {
 public:
  RecomputeOp(RecomputeFn fn, std::vector<Tensor> explicit_inputs, std::vector<Tensor> external,
              const std::vector<Tensor>& outs, std::vector<uint64_t> seeds)
      : Operation(outs.at(0).mesh(), "recompute_grad", joined(external, outs), ""),
        fn_(std::move(fn)),
        explicit_inputs_(std::move(explicit_inputs)),
        num_external_(static_cast<int>(external.size())),
        seeds_(std::move(seeds)) {
    for (const Tensor& t : outs) add_output(t.shape(), t.dtype());
  }
  void compute(KernelContext& ctx) const override {
    for (int i = 0; i < num_outputs(); ++i) ctx.set_output(i, ctx.input(num_external_ + i));
  }
  bool reads_input(int input) const override { return input >= num_external_; }
  std::vector<Tensor> gradient(const std::vector<Tensor>& g) const override {
    graph().queue_random_seeds(seeds_);  // the replay draws the original's numbers
    std::vector<Tensor> again;
    try {
      again = fn_(explicit_inputs_);
    } catch (...) {
      graph().queue_random_seeds({});
      throw;
    }
    graph().queue_random_seeds({});
    bool same = again.size() == static_cast<size_t>(num_outputs());
    for (size_t i = 0; same && i < again.size(); ++i)
      same = again[i].valid() && again[i].shape() == output(static_cast<int>(i)).shape() &&
             again[i].dtype() == output(static_cast<int>(i)).dtype();
    if (!same) {
      throw ValueError(
          "recompute_grad: fn built other outputs when called again for the backward pass; it "
          "must build the same computation each time");
    }
    std::vector<Tensor> ys, grad_ys, xs;
    for (size_t i = 0; i < again.size(); ++i) {
      if (!g[i].valid() || !is_floating(again[i].dtype())) continue;
      ys.push_back(again[i]);
      grad_ys.push_back(g[i]);
    }
    std::vector<int> x_input;
    for (int i = 0; i < num_external_; ++i) {
      if (!is_floating(inputs()[i].dtype())) continue;
      xs.push_back(inputs()[i]);
      x_input.push_back(i);
    }
    std::vector<Tensor> grads(inputs().size());
    if (ys.empty() || xs.empty()) return grads;
    const std::vector<Tensor> d = gradients(ys, xs, grad_ys);
    for (size_t k = 0; k < xs.size(); ++k) grads[x_input[k]] = d[k];
    return grads;
  }
  double flops() const override { return 0; }

 private:
  RecomputeFn fn_;
  std::vector<Tensor> explicit_inputs_;
  int num_external_;
  std::vector<uint64_t> seeds_;
};

}  // namespace

std::vector<Tensor> recompute_grad(const RecomputeFn& fn, const std::vector<Tensor>& inputs) {
  if (inputs.empty()) throw ValueError("recompute_grad: no inputs given");
  for (const Tensor& t : inputs)
    if (!t.valid()) throw ValueError("recompute_grad: an input is an invalid mtf::Tensor");
  Graph& graph = inputs[0].graph();
  const size_t first = graph.operations().size();
  const std::vector<Tensor> outs = fn(inputs);
  if (outs.empty()) throw ValueError("recompute_grad: fn returned no tensors");
  const auto& ops = graph.operations();
  std::set<const Operation*> made;
  for (size_t i = first; i < ops.size(); ++i) made.insert(ops[i].get());
  for (const Tensor& t : outs) {
    if (!t.valid() || !made.count(&t.op())) {
      throw ValueError(
          "recompute_grad: fn returned " +
          (t.valid() ? t.describe() : std::string("an invalid tensor")) +
          ", which it did not compute; return only tensors fn computes (pass others around "
          "recompute_grad)");
    }
  }
  // What fn's ops read from outside fn; a variable fn made itself counts as
  // outside (it outlives the pass, and its gradient is wanted).
  std::vector<Tensor> external = inputs;
  std::set<int64_t> seen;
  for (const Tensor& t : inputs) seen.insert(t.id());
  std::vector<uint64_t> seeds;
  for (size_t i = first; i < ops.size(); ++i) {
    const Operation& op = *ops[i];
    if (const uint64_t s = ops::random_seed_of(op)) seeds.push_back(s);
    for (const Tensor& in : op.inputs()) {
      const bool outside = !made.count(&in.op()) || in.op().type() == "variable";
      if (outside && seen.insert(in.id()).second) external.push_back(in);
    }
  }
  return graph.add<RecomputeOp>(fn, inputs, external, outs, seeds)->outputs();
}

}  // namespace mtf
