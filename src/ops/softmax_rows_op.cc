// softmax's bfloat16 composition and its gradient's as one op each, for the
// lowering's rows pass (lowering/row_kernels.h). No op reads these ops, so
// they are never lowered for themselves: the pass runs one in place of its
// composition's steps (`composition`, ending in `result`) where nothing
// splits the dimension, with the same bits.
#include <set>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

class SoftmaxRowsOp : public Operation {
 public:
  // inputs: {xs} for softmax, {dy, out} for its gradient.
  SoftmaxRowsOp(std::vector<Tensor> inputs, const Tensor& result,
                std::vector<const Operation*> composition)
      : Operation(result.mesh(), inputs.size() == 1 ? "softmax" : "softmax_grad", inputs, ""),
        result_(&result.op()),
        composition_(std::move(composition)) {
    add_output(result.shape(), bfloat16);
  }
  void compute(KernelContext& ctx) const override {
    const bool fixed_order = ctx.state().reproducible;
    if (inputs().size() == 1) {
      kernels::softmax_rows_bfloat16(ctx.input(0), ctx.allocate_output(0), fixed_order);
    } else {
      kernels::softmax_gradient_rows_bfloat16(ctx.input(0), ctx.input(1), ctx.allocate_output(0),
                                              fixed_order);
    }
  }
  bool computes_bfloat16() const override { return true; }
  bool differentiable() const override { return false; }
  double flops() const override {
    double f = 0;
    for (const Operation* op : composition_) f += op->flops();
    return f;
  }
  const Operation* result() const { return result_; }
  const std::vector<const Operation*>& composition() const { return composition_; }

 private:
  const Operation* result_;
  std::vector<const Operation*> composition_;
};

// The ops on the paths from `to` back to `from` (whose ops are not included).
std::vector<const Operation*> ops_between(const std::vector<Tensor>& from, const Tensor& to) {
  std::set<int64_t> stops;
  for (const Tensor& t : from) stops.insert(t.id());
  std::vector<const Operation*> out, stack{&to.op()};
  std::set<const Operation*> seen;
  while (!stack.empty()) {
    const Operation* op = stack.back();
    stack.pop_back();
    if (!seen.insert(op).second) continue;
    out.push_back(op);
    for (const Tensor& in : op->inputs())
      if (!stops.count(in.id())) stack.push_back(&in.op());
  }
  return out;
}

// Every tensor bfloat16, of one shape, with `dim` innermost.
bool rows_of(const std::vector<Tensor>& ts, const Dimension& dim) {
  for (const Tensor& t : ts) {
    const Shape& s = t.shape();
    if (t.dtype() != bfloat16 || !(s == ts[0].shape()) || s.ndims() == 0 ||
        s[s.ndims() - 1].name != dim.name)
      return false;
  }
  return true;
}

}  // namespace

namespace ops {

bool as_softmax_rows(const Operation& op, SoftmaxRows* info) {
  const auto* r = dynamic_cast<const SoftmaxRowsOp*>(&op);
  if (!r) return false;
  info->result = r->result();
  info->composition = r->composition();
  return true;
}

void record_softmax_rows(const Tensor& xs, const Tensor& y, const Dimension& dim) {
  if (rows_of({xs, y}, dim))
    xs.graph().add<SoftmaxRowsOp>(std::vector<Tensor>{xs}, y, ops_between({xs}, y));
}

void record_softmax_gradient_rows(const Tensor& dy, const Tensor& out, const Tensor& dx,
                                  const Dimension& dim) {
  if (rows_of({dy, out, dx}, dim))
    dx.graph().add<SoftmaxRowsOp>(std::vector<Tensor>{dy, out}, dx, ops_between({dy, out}, dx));
}

}  // namespace ops
}  // namespace mtf
