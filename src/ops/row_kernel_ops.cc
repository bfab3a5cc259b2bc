// Compositions along the innermost dimension recorded as one op each, for
// the lowering's rows pass (lowering/row_kernels.h): bfloat16 softmax, the
// normalization of layer norm, and their gradients. No op reads these ops,
// so they are never lowered for themselves: the pass runs one in place of
// its composition's steps (`composition`, whose values `results` are read
// after it) where nothing splits the dimension, with the same bits.
#include <set>

#include "kernels/kernel_context.h"
#include "kernels/kernels.h"
#include "ops/op_util.h"

namespace mtf {
namespace {

enum class Kind { kSoftmax, kSoftmaxGradient, kNormalize, kNormalizeGradient };

const char* type_of(Kind kind) {
  switch (kind) {
    case Kind::kSoftmax:
      return "softmax";
    case Kind::kSoftmaxGradient:
      return "softmax_grad";
    case Kind::kNormalize:
      return "layer_norm";
    case Kind::kNormalizeGradient:
      return "layer_norm_grad";
  }
  return "";
}

class RowKernelOp : public Operation {
 public:
  RowKernelOp(Kind kind, std::vector<Tensor> inputs, const std::vector<Tensor>& results,
              std::vector<const Operation*> composition, float epsilon = 0)
      : Operation(results[0].mesh(), type_of(kind), std::move(inputs), ""),
        kind_(kind),
        composition_(std::move(composition)),
        epsilon_(epsilon) {
    for (const Tensor& t : results) {
      add_output(t.shape(), t.dtype());
      results_.push_back(&t.op());
    }
  }
  void compute(KernelContext& ctx) const override {
    const bool fixed_order = ctx.state().reproducible;
    switch (kind_) {
      case Kind::kSoftmax:
        return kernels::softmax_rows_bfloat16(ctx.input(0), ctx.allocate_output(0), fixed_order);
      case Kind::kSoftmaxGradient:
        return kernels::softmax_gradient_rows_bfloat16(ctx.input(0), ctx.input(1),
                                                       ctx.allocate_output(0), fixed_order);
      case Kind::kNormalize: {
        HostTensor& z = ctx.allocate_output(0);
        return kernels::layer_norm_rows_bfloat16(ctx.input(0), z, ctx.allocate_output(1), epsilon_,
                                                 fixed_order);
      }
      case Kind::kNormalizeGradient:
        return kernels::layer_norm_gradient_rows_bfloat16(ctx.input(0), ctx.input(1), ctx.input(2),
                                                          ctx.allocate_output(0), fixed_order);
    }
  }
  bool computes_bfloat16() const override { return true; }
  bool differentiable() const override { return false; }
  double flops() const override {
    double f = 0;
    for (const Operation* op : composition_) f += op->flops();
    return f;
  }
  const std::vector<const Operation*>& results() const { return results_; }
  const std::vector<const Operation*>& composition() const { return composition_; }

 private:
  Kind kind_;
  std::vector<const Operation*> results_;
  std::vector<const Operation*> composition_;
  float epsilon_;
};

// The ops on the paths from `to` back to `from` (whose ops are not included).
std::vector<const Operation*> ops_between(const std::vector<Tensor>& from,
                                          const std::vector<Tensor>& to) {
  std::set<int64_t> stops;
  for (const Tensor& t : from) stops.insert(t.id());
  std::vector<const Operation*> out, stack;
  for (const Tensor& t : to) stack.push_back(&t.op());
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

// Every tensor bfloat16; the first's innermost dimension `dim`; each of the
// others of the first's shape, or of it less `dim` (a value per row).
bool rows_of(const std::vector<Tensor>& ts, const Dimension& dim) {
  const Shape& s = ts[0].shape();
  if (s.ndims() == 0 || s[s.ndims() - 1].name != dim.name) return false;
  const Shape per_row = s.minus(Shape({s[s.ndims() - 1]}));
  for (const Tensor& t : ts)
    if (t.dtype() != bfloat16 || !(t.shape() == s || t.shape() == per_row)) return false;
  return true;
}

void record(Kind kind, const std::vector<Tensor>& inputs, const std::vector<Tensor>& results,
            const Dimension& dim, float epsilon = 0) {
  std::vector<Tensor> all = inputs;
  all.insert(all.end(), results.begin(), results.end());
  if (!rows_of(all, dim)) return;
  inputs[0].graph().add<RowKernelOp>(kind, inputs, results, ops_between(inputs, results), epsilon);
}

}  // namespace

namespace ops {

bool as_row_kernel(const Operation& op, RowKernel* info) {
  const auto* r = dynamic_cast<const RowKernelOp*>(&op);
  if (!r) return false;
  info->results = r->results();
  info->composition = r->composition();
  return true;
}

void record_softmax_rows(const Tensor& xs, const Tensor& y, const Dimension& dim) {
  record(Kind::kSoftmax, {xs}, {y}, dim);
}

void record_softmax_gradient_rows(const Tensor& dy, const Tensor& out, const Tensor& dx,
                                  const Dimension& dim) {
  record(Kind::kSoftmaxGradient, {dy, out}, {dx}, dim);
}

void record_normalize_rows(const Tensor& xs, const Tensor& z, const Tensor& r, const Dimension& dim,
                           float epsilon) {
  record(Kind::kNormalize, {xs}, {z, r}, dim, epsilon);
}

void record_normalize_gradient_rows(const Tensor& dz, const Tensor& z, const Tensor& r,
                                    const Tensor& dx, const Dimension& dim) {
  record(Kind::kNormalizeGradient, {dz, z, r}, {dx}, dim);
}

}  // namespace ops
}  // namespace mtf
